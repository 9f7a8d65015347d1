package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

const (
	// killGrace is how long the members of a group may take to die after SIGKILL
	// before the driver gives up on them (a process stuck in the kernel) and
	// considers the app stopped anyway.
	killGrace = 5 * time.Second
	// groupPollMax caps the backoff of the group-emptiness check.
	groupPollMax = 100 * time.Millisecond
)

// proc is one running process group of an app: the process the driver started (or
// adopted), which leads the group, and whatever it started.
type proc struct {
	pid, pgid  int
	startTicks uint64
	started    time.Time
	cmd        *exec.Cmd // nil when adopted: not our child
	pidf       *os.File  // pidfd of the leader, readable once it has exited
	logOffset  int64     // size of the log file when the process started

	// Set before the goroutines start, then read-only.
	cancelProbe context.CancelFunc // nil when no prober runs
	probeDone   chan struct{}
	// gate pauses the probes while reaper does not wait for the app (WaitReady).
	gate probe.Gate

	// Guarded by app.mu.
	ready     bool
	exited    bool // the leader has exited; the rest of the group is being waited for
	stopping  bool
	stopAt    time.Time
	killedAt  time.Time
	killTimer *time.Timer
	done      bool
	gone      chan struct{} // closed once no process of the group is alive
}

// spawn starts the app's command in a new process group; a.mu must be held.
func (d *Driver) spawn(a *app) error {
	s := &a.spec
	now := time.Now()
	fail := func(reason string) error { return d.failStart(a, now, reason) }
	if !d.reserve(2) {
		return ErrClosed
	}
	running := false
	defer func() {
		if !running {
			d.wg.Add(-2)
		}
	}()

	// A missing working directory would be reported by exec as a missing program.
	if s.dir != "" {
		if err := checkDir(s.dir); err != nil {
			return fail(err.Error())
		}
	}
	logf, offset, err := openLog(s.logFile)
	if err != nil {
		return fail("cannot open its log file: " + err.Error())
	}
	cmd := exec.Command(s.command[0], s.command[1:]...)
	cmd.Dir = s.dir
	// The marker proves, should the pid file be lost, that the process is this app
	// started by a driver on this data directory (MarkerEnv); it wins over the env.
	cmd.Env = append(slices.Clip(s.env), MarkerEnv+"="+markerValue(d.key, s.id))
	cmd.Stdout = logf
	cmd.Stderr = logf
	// A group of its own, so that stop signals reach everything the app started.
	// No Pdeathsig: apps outlive reaper.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = logf.Close() // the child holds its own descriptor
	if err != nil {
		return fail(err.Error())
	}
	pid := cmd.Process.Pid
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		// Its exit would go unnoticed: do not leave it running.
		_ = unix.Kill(-pid, unix.SIGKILL)
		_ = cmd.Wait()
		return fail("pidfd_open: " + err.Error())
	}
	p := &proc{
		pid: pid, pgid: pid, started: now, cmd: cmd,
		pidf:      os.NewFile(uintptr(fd), "pidfd"),
		logOffset: offset,
		gone:      make(chan struct{}),
	}
	// The child cannot have been collected yet (only wait does that), so its stat
	// is readable even if it already exited.
	if st, err := readStat(pid); err == nil {
		p.startTicks = st.startTicks
		d.writePid(s.id, pidRecord{PID: pid, PGID: pid, StartTicks: st.startTicks, Command: s.command, StartedAt: now})
	} else {
		d.log.Warn("cannot read the app's start time: a restarted reaper will not adopt it", "app", s.id, "pid", pid, "err", err)
	}
	a.proc = p
	a.set(paas.StateWantsToBeUp, &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: now})
	ctx, cancel := context.WithCancel(d.base)
	p.cancelProbe, p.probeDone = cancel, make(chan struct{})
	running = true
	go func() {
		defer d.wg.Done()
		d.wait(a, p)
	}()
	go func() {
		defer d.wg.Done()
		d.probeUntilReady(ctx, a, p)
	}()
	d.log.Info("app started", "app", s.id, "pid", pid)
	return nil
}

// failStart records a start that failed before any process ran; a.mu must be held.
func (d *Driver) failStart(a *app, at time.Time, reason string) error {
	a.set(paas.StateShouldBeDown, &paas.Deployment{
		State: paas.DeploymentFail, Action: "DEPLOY", At: at, Cause: reason,
	})
	d.log.Error("app could not be started", "app", a.spec.id, "reason", reason)
	return fmt.Errorf("process: start %s: %w: %s", a.spec.id, paas.ErrStartFailed, reason)
}

// checkDir says what is wrong with a working directory, in the words of exec.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("chdir %s: %w", dir, pe.Err)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("chdir %s: %w", dir, syscall.ENOTDIR)
	}
	return nil
}

// openLog opens the app's log file for appending and returns its current size.
func openLog(path string) (*os.File, int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// probeUntilReady probes the app on the readiness schedule (probe.Loop) until it is
// ready or ctx ends (stop, exit, Close).
func (d *Driver) probeUntilReady(ctx context.Context, a *app, p *proc) {
	defer close(p.probeDone)
	s := &a.spec
	pr := func(ctx context.Context) probe.Result { return d.probe.Probe(ctx, &s.ready) }
	if probe.Loop(ctx, p.started, s.interval, &p.gate, pr) {
		d.markReady(a, p)
	}
}

func (d *Driver) markReady(a *app, p *proc) {
	a.mu.Lock()
	if a.proc != p || p.ready || p.exited || p.stopping {
		a.mu.Unlock()
		return
	}
	p.ready = true
	a.set(paas.StateShouldBeUp, &paas.Deployment{State: paas.DeploymentOK, Action: "DEPLOY", At: p.started})
	if p.cmd != nil { // ours, not adopted: started at p.started
		a.boot = time.Since(p.started)
	}
	a.mu.Unlock()
	// Watchers first: held requests wait for what they do next; the log line can
	// wait for them.
	d.notify(a.spec.id)
	d.log.Info("app ready", "app", a.spec.id, "pid", p.pid, "after", since(p.started))
}

// beginStop signals the group and arms the SIGKILL; a.mu must be held.
func (d *Driver) beginStop(a *app, p *proc) {
	p.stopping = true
	p.stopAt = time.Now()
	if p.cancelProbe != nil {
		p.cancelProbe()
	}
	sig := unix.SignalNum(a.spec.stopSignal)
	if err := unix.Kill(-p.pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		d.log.Warn("cannot signal the app", "app", a.spec.id, "pgid", p.pgid, "signal", a.spec.stopSignal, "err", err)
	}
	p.killTimer = time.AfterFunc(a.spec.stopTimeout, func() { d.killGroup(a, p, "stop timeout") })
	d.log.Info("stopping app", "app", a.spec.id, "pid", p.pid, "signal", a.spec.stopSignal, "timeout", a.spec.stopTimeout)
}

// killGroup sends SIGKILL to what is left of the group, once.
func (d *Driver) killGroup(a *app, p *proc, why string) {
	a.mu.Lock()
	if p.done || !p.killedAt.IsZero() {
		a.mu.Unlock()
		return
	}
	p.killedAt = time.Now()
	a.mu.Unlock()
	// The scan and the kill happen outside the lock (Observe must not wait on
	// /proc). The group id cannot be taken by another group while a member lives,
	// and the scan just saw one.
	if !groupAlive(p.pgid) {
		return
	}
	if err := unix.Kill(-p.pgid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		d.log.Warn("cannot kill the app's process group", "app", a.spec.id, "pgid", p.pgid, "err", err)
		return
	}
	d.log.Info("killed the app's process group", "app", a.spec.id, "pgid", p.pgid, "why", why)
}

// wait watches the leader of p until it exits, then cleans up its group and records
// the transition. If the driver closes first it returns, leaving the app running.
func (d *Driver) wait(a *app, p *proc) {
	err := waitExit(p.pidf)
	_ = p.pidf.Close()
	if err != nil {
		if d.base.Err() == nil {
			d.log.Error("cannot watch the app's process any more", "app", a.spec.id, "pid", p.pid, "err", err)
		}
		if p.cmd != nil {
			// Collect a child's status whenever it exits, so that it does not
			// linger as a zombie while this process lives.
			go func() { _ = p.cmd.Wait() }()
		}
		return
	}
	a.mu.Lock()
	p.exited = true
	stopping := p.stopping
	a.mu.Unlock()
	if p.cancelProbe != nil {
		p.cancelProbe()
		<-p.probeDone
	}
	if !stopping {
		// What the leader left behind goes too: it could hold the app's port
		// against the next start.
		d.killGroup(a, p, "its main process exited")
	}
	finished := d.waitGroupGone(a, p)
	// A child is collected only now, so that its pid, which is the group id, could
	// not be reused while the group was being signalled.
	status := "exited"
	if p.cmd != nil {
		_ = p.cmd.Wait()
		status = describeExit(p.cmd.ProcessState)
	}
	if finished {
		d.finish(a, p, status)
	}
}

// waitExit blocks until the process of pidfd f exits (nil) or f is closed (an error).
// The pidfd sits in the runtime's poller, so waiting holds no thread.
func waitExit(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				perr = err
				return true
			}
			return n > 0
		}
	})
	if err != nil {
		return err
	}
	return perr
}

// waitGroupGone waits, polling with a backoff, until no member of p's group is alive.
// It is bounded: by the stop timeout and killGrace while stopping, by killGrace after
// a crash. It returns false if the driver closed first.
func (d *Driver) waitGroupGone(a *app, p *proc) bool {
	backoff := 2 * time.Millisecond
	for groupAlive(p.pgid) {
		a.mu.Lock()
		killedAt := p.killedAt
		a.mu.Unlock()
		if !killedAt.IsZero() && time.Since(killedAt) > killGrace {
			d.log.Error("processes of the app survived SIGKILL; considering it stopped", "app", a.spec.id, "pgid", p.pgid)
			return true
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-d.base.Done():
			t.Stop()
			return false
		}
		backoff = min(2*backoff, groupPollMax)
	}
	return true
}

// finish records that p's group is gone.
func (d *Driver) finish(a *app, p *proc, status string) {
	a.mu.Lock()
	byItself := !p.stopping
	a.mu.Unlock()
	var tail string
	if byItself {
		tail = logTail(a.spec.logFile, p.logOffset) // read outside the lock
	}

	a.mu.Lock()
	switch {
	case p.stopping:
		a.set(paas.StateShouldBeDown, &paas.Deployment{State: paas.DeploymentOK, Action: "UNDEPLOY", At: p.stopAt})
	case !p.ready:
		// Exited: it ran, so a start again may work (reaper retries it).
		a.set(paas.StateShouldBeDown, &paas.Deployment{
			State: paas.DeploymentFail, Action: "DEPLOY", At: p.started,
			Cause: withTail(status+" before it was ready", tail), Exited: true,
		})
	default:
		// A crash of a running app: down, and its deployment stays OK, so the next
		// request wakes it; reaper learns how it ended (a crash loop is counted).
		a.set(paas.StateShouldBeDown, nil)
		a.exit = &paas.Exit{At: time.Now(), Status: withTail(status, tail)}
	}
	if p.killTimer != nil {
		p.killTimer.Stop()
	}
	if err := os.Remove(pidPath(d.pidDir, a.spec.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn("cannot remove the app's pid file", "app", a.spec.id, "err", err)
	}
	p.done = true
	a.proc = nil
	stopping, ready := p.stopping, p.ready
	a.mu.Unlock()
	// Watchers first, then Stop's callers: when Stop returns, watchers know.
	defer close(p.gone)

	switch {
	case stopping:
		d.log.Info("app stopped", "app", a.spec.id, "pid", p.pid, "took", since(p.stopAt))
	case !ready:
		d.log.Warn("app exited before it was ready", "app", a.spec.id, "pid", p.pid, "status", status)
	default:
		d.log.Warn("app exited", "app", a.spec.id, "pid", p.pid, "status", status, "ran", since(p.started))
	}
	d.notify(a.spec.id)
}

// describeExit says how a child ended: "exited with status 3", "killed by signal 9
// (SIGKILL)".
func describeExit(ps *os.ProcessState) string {
	if ps == nil {
		return "exited"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), unix.SignalName(ws.Signal()))
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}

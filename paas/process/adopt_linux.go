package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reapergw/reaper/paas"
)

// adoptProbeTimeout bounds the readiness probe New runs on each adopted app.
const adoptProbeTimeout = 2 * time.Second

// adoptAll adopts the apps a previous driver left running: those its pid files
// name (adoptPidFiles), then those whose pid file is gone but which carry this data
// directory's marker (adoptMarked). It signals nothing.
func (d *Driver) adoptAll() {
	adopted := d.adoptPidFiles()
	adopted = append(adopted, d.adoptMarked()...)

	// One probe each, in parallel, so that Observe tells starting from ready at once.
	ready := make([]bool, len(adopted))
	ctx, cancel := context.WithTimeout(d.base, adoptProbeTimeout)
	var wg sync.WaitGroup
	for i, a := range adopted {
		wg.Go(func() { ready[i] = d.probe.Ready(ctx, &a.spec.ready) })
	}
	wg.Wait()
	cancel()

	for i, a := range adopted {
		a.mu.Lock()
		d.watchAdopted(a, ready[i]) // New has not returned: the driver cannot be closed
		a.mu.Unlock()
	}
}

// adoptPidFiles reads the pid files a previous driver left and takes over the apps
// that still run as configured, returning them. A file it cannot trust is removed
// (the process is gone, or its pid now belongs to another program) or left with its
// process alone (an app no longer configured, or whose command changed).
func (d *Driver) adoptPidFiles() []*app {
	entries, err := os.ReadDir(d.pidDir)
	if err != nil {
		d.log.Error("cannot read the pid files: running apps are not adopted", "dir", d.pidDir, "err", err)
		return nil
	}
	var adopted []*app
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(d.pidDir, name)
		if strings.HasPrefix(name, tmpPrefix) {
			_ = os.Remove(path) // a write cut short by a crash
			continue
		}
		id, ok := strings.CutSuffix(name, pidSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		rec, err := readPidFile(path)
		if err != nil {
			d.log.Warn("removed an unreadable pid file", "file", path, "err", err)
			d.removeFile(path)
			continue
		}
		pidf, why, ours := openPid(rec)
		if pidf == nil {
			if ours {
				d.log.Warn("removed a pid file; its process is left running", "app", id, "pid", rec.PID, "why", why)
			} else {
				d.log.Info("removed a stale pid file", "app", id, "pid", rec.PID, "why", why)
			}
			d.removeFile(path)
			continue
		}
		a := d.apps[id]
		switch {
		case a == nil:
			_ = pidf.Close()
			d.log.Warn("an app that is no longer configured is still running: left alone", "app", id, "pid", rec.PID)
			continue
		case !slices.Equal(rec.Command, a.spec.command):
			_ = pidf.Close()
			// The commands are not logged: arguments may hold secrets.
			d.log.Warn("the app runs with another command than the configured one: left alone, not adopted (stop it by hand)",
				"app", id, "pid", rec.PID)
			continue
		}
		a.proc = newAdopted(rec, pidf, a.spec.logFile)
		adopted = append(adopted, a)
	}
	return adopted
}

// adoptMarked takes over, and returns, the configured apps that have no process yet
// but whose earlier process still runs without its pid file (deleted by hand, or
// with the data directory), proven by proveMarked. It writes their pid files again.
func (d *Driver) adoptMarked() []*app {
	var adopted []*app
	for _, m := range scanMarked(d.key) {
		a := d.apps[m.id]
		switch {
		case a == nil:
			d.log.Warn("an app that is no longer configured is still running: left alone", "app", m.id, "pid", m.pid)
			continue
		case a.proc != nil:
			if a.proc.pid != m.pid {
				d.log.Warn("another process started by reaper for the app still runs: left alone", "app", m.id, "pid", m.pid)
			}
			continue
		}
		pidf, rec, why := proveMarked(m.pid, d.key, m.id, a.spec.command)
		if pidf == nil {
			d.log.Warn("a process started by reaper for the app still runs without its pid file: left alone, not adopted (stop it with reaper stop-apps)",
				"app", m.id, "pid", m.pid, "why", why)
			continue
		}
		d.writePid(a.spec.id, rec)
		a.proc = newAdopted(rec, pidf, a.spec.logFile)
		adopted = append(adopted, a)
		d.log.Info("found the app running without its pid file, proven by its "+MarkerEnv+" marker", "app", m.id, "pid", m.pid)
	}
	return adopted
}

// newAdopted returns the proc of a process the driver did not start itself.
func newAdopted(rec pidRecord, pidf *os.File, logFile string) *proc {
	started := rec.StartedAt
	if started.IsZero() {
		started = time.Now()
	}
	var offset int64
	if fi, err := os.Stat(logFile); err == nil {
		offset = fi.Size()
	}
	return &proc{
		pid: rec.PID, pgid: rec.PGID, startTicks: rec.StartTicks, started: started,
		pidf: pidf, logOffset: offset, gone: make(chan struct{}),
	}
}

// writePid writes the pid file of app id, logging a failure.
func (d *Driver) writePid(id string, rec pidRecord) {
	if err := writePidFile(d.pidDir, id, rec); err != nil {
		d.log.Warn("cannot write the app's pid file: a restarted reaper will not adopt it", "app", id, "pid", rec.PID, "err", err)
	}
}

// watchAdopted records the adopted process a.proc and starts its goroutines; a.mu
// must be held. It returns false, dropping a.proc, once the driver is closed.
func (d *Driver) watchAdopted(a *app, ready bool) bool {
	p := a.proc
	n := 1
	if !ready {
		n = 2
	}
	if !d.reserve(n) {
		_ = p.pidf.Close()
		a.proc = nil
		return false
	}
	p.ready = ready
	if ready {
		a.set(paas.StateShouldBeUp, &paas.Deployment{State: paas.DeploymentOK, Action: "DEPLOY", At: p.started})
	} else {
		a.set(paas.StateWantsToBeUp, &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: p.started})
	}
	var ctx context.Context
	if !ready {
		// Set before the waiter starts: it reads them without the lock.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(d.base)
		p.cancelProbe, p.probeDone = cancel, make(chan struct{})
	}
	go func() {
		defer d.wg.Done()
		d.wait(a, p)
	}()
	if !ready {
		go func() {
			defer d.wg.Done()
			d.probeUntilReady(ctx, a, p)
		}()
	}
	d.log.Info("adopted a running app", "app", a.spec.id, "pid", p.pid, "ready", ready)
	return true
}

// whyReused is openPid's why for a pid that another process took.
const whyReused = "its pid now belongs to another process (the start time differs)"

// openPid opens a pidfd on the process of rec if it is the one reaper started: alive,
// with the recorded start time and group. The pidfd is opened first and the process
// checked after, so that the pidfd cannot belong to a process that took the pid in
// between. Otherwise it returns why, and ours when the process is reaper's app but
// cannot be managed (it left its group).
func openPid(rec pidRecord) (pidf *os.File, why string, ours bool) {
	fd, err := unix.PidfdOpen(rec.PID, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, "the process is gone", false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	st, err := readStat(rec.PID)
	switch {
	case err != nil:
		why = "the process is gone"
	case !st.alive():
		why = "the process has exited"
	case st.startTicks != rec.StartTicks:
		why = whyReused
	case st.pgrp != rec.PGID:
		why, ours = "the process left its process group, so it cannot be stopped as a whole", true
	default:
		return f, "", true
	}
	_ = f.Close()
	return nil, why, ours
}

func (d *Driver) removeFile(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn("cannot remove a pid file", "file", path, "err", err)
	}
}

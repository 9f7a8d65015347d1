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

// adoptAll reads the pid files a previous driver left and adopts the apps that still
// run as configured. It signals nothing: a file it cannot trust is removed (the
// process is gone, or its pid now belongs to another program) or left with its
// process alone (an app no longer configured, or whose command changed).
func (d *Driver) adoptAll() {
	entries, err := os.ReadDir(d.pidDir)
	if err != nil {
		d.log.Error("cannot read the pid files: running apps are not adopted", "dir", d.pidDir, "err", err)
		return
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
		started := rec.StartedAt
		if started.IsZero() {
			started = time.Now()
		}
		var offset int64
		if fi, err := os.Stat(a.spec.logFile); err == nil {
			offset = fi.Size()
		}
		a.proc = &proc{
			pid: rec.PID, pgid: rec.PGID, startTicks: rec.StartTicks, started: started,
			pidf: pidf, logOffset: offset, gone: make(chan struct{}),
		}
		adopted = append(adopted, a)
	}

	// One probe each, in parallel, so that Observe tells starting from ready at once.
	ready := make([]bool, len(adopted))
	ctx, cancel := context.WithTimeout(d.base, adoptProbeTimeout)
	var wg sync.WaitGroup
	for i, a := range adopted {
		wg.Go(func() { ready[i] = d.probe.Ready(ctx, a.spec.readyTCP, a.spec.readyHTTP) })
	}
	wg.Wait()
	cancel()

	for i, a := range adopted {
		d.watchAdopted(a, ready[i])
	}
}

// watchAdopted records the adopted process of a and starts its goroutines.
func (d *Driver) watchAdopted(a *app, ready bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.proc
	p.ready = ready
	n := 1
	if ready {
		a.set(paas.StateShouldBeUp, &paas.Deployment{State: paas.DeploymentOK, Action: "DEPLOY", At: p.started})
	} else {
		a.set(paas.StateWantsToBeUp, &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: p.started})
		n = 2
	}
	d.reserve(n) // New has not returned: the driver cannot be closed
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
}

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
		why = "its pid now belongs to another process (the start time differs)"
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

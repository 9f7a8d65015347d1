package process

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// maxParallelStops bounds the apps StopApps stops at once.
const maxParallelStops = 16

// target is one app StopApps found, with a pidfd on its process once proven.
type target struct {
	id      string
	rec     pidRecord
	pidf    *os.File // nil when decided without stopping (result set)
	file    bool     // found by its pid file (else by its marker)
	removes bool     // its pid file is to be removed once done
	result  StopResult
}

// StopApps stops the apps that a process driver started for opts.DataDir, whether a
// reaper node runs or not, and only those: the processes named by the pid files
// under <data_dir>/process, each proven to be the one the driver started (its
// recorded start time, through a pidfd, so that a reused pid is never signalled),
// and the group leaders that carry the data directory's marker (MarkerEnv) but lost
// their pid file. Each app's process group gets its stop signal, then SIGKILL after
// its stop timeout; apps are stopped in parallel, so StopApps blocks for about the
// longest stop timeout, or until ctx ends. The pid file of each app stopped, or
// found not running, is removed.
//
// While a reaper node runs on the data directory (a driver holds its lock), it
// returns ErrNodeRunning and stops nothing, unless opts.Force. While StopApps runs,
// a driver cannot be created on the data directory (New fails with ErrStopping).
// Other errors are technical failures: the data directory cannot be read.
func StopApps(ctx context.Context, opts StopOptions) (StopReport, error) {
	var rep StopReport
	if opts.DataDir == "" {
		return rep, errors.New("process: StopOptions.DataDir is required")
	}
	pidDir := filepath.Join(opts.DataDir, "process")
	if _, err := os.Stat(pidDir); err == nil {
		lock, held, err := lockExclusive(pidDir)
		if err != nil {
			return rep, fmt.Errorf("process: lock %s: %w", filepath.Join(pidDir, lockName), err)
		}
		if held {
			rep.NodeRunning, rep.NodePIDs = true, lockHolders(pidDir)
			if !opts.Force {
				return rep, ErrNodeRunning
			}
		} else {
			defer lock.Close()
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("process: data directory: %w", err)
	}

	specs := make(map[string]spec, len(opts.Apps))
	for i := range opts.Apps {
		c := &opts.Apps[i]
		specs[c.ID] = c.resolve(opts.DataDir, func(string) (string, bool) { return "", false })
	}
	targets, err := findTargets(pidDir, dataDirKey(opts.DataDir))
	if err != nil {
		return rep, err
	}
	stopTargets(ctx, targets, specs)
	for _, t := range targets {
		if t.removes {
			removeIfSame(pidDir, t.id, t.rec)
		}
		rep.Apps = append(rep.Apps, t.result)
	}
	slices.SortFunc(rep.Apps, func(a, b StopResult) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.PID, b.PID))
	})
	return rep, nil
}

// findTargets reads the pid files of pidDir (absent: none), then looks for the
// marked processes that no pid file names.
func findTargets(pidDir, key string) ([]*target, error) {
	entries, err := os.ReadDir(pidDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("process: read the pid files: %w", err)
	}
	var out []*target
	seen := map[int]bool{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), pidSuffix)
		if !ok || !e.Type().IsRegular() || strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		t := fromPidFile(pidDir, id)
		if t.pidf != nil {
			seen[t.rec.PID] = true
		}
		out = append(out, t)
	}
	for _, m := range scanMarked(key) {
		if seen[m.pid] {
			continue
		}
		pidf, rec, why := proveMarked(m.pid, key, m.id, nil)
		t := &target{id: m.id, rec: rec, pidf: pidf}
		if pidf == nil {
			// It was marked a moment ago: it exited, or is not what it seemed.
			t.result = StopResult{App: m.id, PID: m.pid, Outcome: NotRunning, Detail: "found by its " + MarkerEnv + " marker, then: " + why}
		}
		out = append(out, t)
	}
	return out, nil
}

// fromPidFile reads the pid file of app id and opens its process if it is the one
// the driver started.
func fromPidFile(pidDir, id string) *target {
	t := &target{id: id, file: true}
	rec, err := readPidFile(pidPath(pidDir, id))
	if err != nil {
		t.removes = true
		t.result = StopResult{App: id, Outcome: NotOurs, Detail: "unreadable pid file (" + err.Error() + "), removed"}
		return t
	}
	t.rec = rec
	pidf, why, ours := openPid(rec)
	switch {
	case pidf != nil:
		t.pidf = pidf
	case ours:
		// Reaper's process, but out of its group: the group cannot be stopped as a
		// whole, and its pid file stays for a look by hand.
		t.result = StopResult{App: id, PID: rec.PID, Outcome: StopFailed, Detail: why + ": stop it by hand"}
	case why == whyReused:
		t.removes = true
		t.result = StopResult{App: id, PID: rec.PID, Outcome: NotOurs, Detail: why + "; nothing signalled, stale pid file removed"}
	default:
		t.removes = true
		t.result = StopResult{App: id, PID: rec.PID, Outcome: NotRunning, Detail: why + ", stale pid file removed"}
	}
	return t
}

// stopTargets stops the proven targets, at most maxParallelStops at once.
func stopTargets(ctx context.Context, targets []*target, specs map[string]spec) {
	sem := make(chan struct{}, maxParallelStops)
	var wg sync.WaitGroup
	for _, t := range targets {
		if t.pidf == nil {
			continue
		}
		sig, timeout := DefaultStopSignal, DefaultStopTimeout
		if s, ok := specs[t.id]; ok {
			sig, timeout = s.stopSignal, s.stopTimeout
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			defer t.pidf.Close()
			t.result = stopGroup(ctx, t.rec.PGID, sig, timeout)
			t.result.App, t.result.PID = t.id, t.rec.PID
			t.removes = t.result.Outcome == Stopped && t.file
			if !t.file && t.result.Outcome == Stopped {
				t.result.Detail += "; found by its " + MarkerEnv + " marker, its pid file was gone"
			}
		})
	}
	wg.Wait()
}

// stopGroup sends sig to process group pgid, whose leader was just proven to be
// reaper's app (its pidfd is open), waits up to timeout for the group to be gone,
// then sends SIGKILL and waits up to killGrace.
func stopGroup(ctx context.Context, pgid int, sig string, timeout time.Duration) StopResult {
	start := time.Now()
	if err := unix.Kill(-pgid, unix.SignalNum(sig)); err != nil && !errors.Is(err, unix.ESRCH) {
		return StopResult{Outcome: StopFailed, Detail: "cannot send " + sig + ": " + err.Error()}
	}
	if waitGone(ctx, pgid, timeout) {
		return StopResult{Outcome: Stopped, Detail: fmt.Sprintf("%s, gone after %s", sig, since(start))}
	}
	if ctx.Err() != nil {
		return StopResult{Outcome: StopFailed, Detail: sig + " sent, interrupted before the app was gone"}
	}
	// As in killGroup: the group id cannot have been reused, a member was just seen.
	if err := unix.Kill(-pgid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return StopResult{Outcome: StopFailed, Detail: "still running after its stop timeout (" + timeout.String() + "), and SIGKILL failed: " + err.Error()}
	}
	if waitGone(ctx, pgid, killGrace) {
		return StopResult{Outcome: Stopped, Detail: fmt.Sprintf("%s, then SIGKILL after its stop timeout (%s)", sig, timeout)}
	}
	return StopResult{Outcome: StopFailed, Detail: "processes of its group survived SIGKILL"}
}

// waitGone polls, with a backoff, until no member of group pgid is alive (true), or
// limit passes or ctx ends (false). There is no event for the end of a group.
func waitGone(ctx context.Context, pgid int, limit time.Duration) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	backoff := 2 * time.Millisecond
	for groupAlive(pgid) {
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-deadline.C:
			t.Stop()
			return !groupAlive(pgid)
		case <-ctx.Done():
			t.Stop()
			return false
		}
		backoff = min(2*backoff, groupPollMax)
	}
	return true
}

// removeIfSame removes the pid file of app id if it still holds rec (a running node
// may have written a new one since), or if it is unreadable.
func removeIfSame(pidDir, id string, rec pidRecord) {
	path := pidPath(pidDir, id)
	cur, err := readPidFile(path)
	if err == nil && (cur.PID != rec.PID || cur.StartTicks != rec.StartTicks) {
		return
	}
	_ = os.Remove(path)
}

package process

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/paas"
)

func stopApps(t *testing.T, opts StopOptions) StopReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	rep, err := StopApps(ctx, opts)
	if err != nil {
		t.Fatalf("StopApps: %v", err)
	}
	return rep
}

func resultOf(rep StopReport, id string) (StopResult, bool) {
	i := slices.IndexFunc(rep.Apps, func(r StopResult) bool { return r.App == id })
	if i < 0 {
		return StopResult{}, false
	}
	return rep.Apps[i], true
}

func TestStopApps_StopsTheDriversAppsAndNothingElse(t *testing.T) {
	dataDir := t.TempDir()
	plain := demo(t, "plain", freeport.Addr(t))
	stubborn := demo(t, "stubborn", freeport.Addr(t), "--ignore-sigterm")
	stubborn.StopTimeout = conf.Duration(300 * time.Millisecond)
	custom := demo(t, "custom", freeport.Addr(t), "--ignore-sigterm")
	custom.StopSignal = "SIGINT" // were SIGTERM sent, it would take the 10 s timeout
	lost := demo(t, "lost", freeport.Addr(t))
	apps := []AppConfig{plain, stubborn, custom, lost}

	d, _ := newDriver(t, dataDir, apps...)
	r := watch(t, d)
	pids := map[string]int{}
	for _, c := range apps {
		start(t, d, c.ID)
		r.untilState(t, c.ID, paas.StateShouldBeUp)
		pids[c.ID], _ = procOf(d, c.ID)
	}
	_ = d.Close()
	// The app whose pid file was deleted, as make clean did.
	if err := os.Remove(pidPath(d.pidDir, "lost")); err != nil {
		t.Fatal(err)
	}
	writeStalePidFiles(t, d.pidDir)
	// Programs that are not reaper's apps for this data directory: a stranger, and
	// a lookalike marked for another data directory.
	stranger, _ := sleeper(t)
	otherAddr := freeport.Addr(t)
	other := startForeign(t, demo(t, "plain", otherAddr).Command, MarkerEnv+"="+markerValue(dataDirKey(t.TempDir()), "plain"), otherAddr)

	rep := stopApps(t, StopOptions{DataDir: dataDir, Apps: apps})
	want := []struct {
		id      string
		outcome StopOutcome
		detail  string
	}{
		{"custom", Stopped, "SIGINT, gone after "},
		{"exited", NotRunning, "the process is gone, stale pid file removed"},
		{"lost", Stopped, "SIGTERM, gone after "},
		{"plain", Stopped, "SIGTERM, gone after "},
		{"reused", NotOurs, whyReused + "; nothing signalled, stale pid file removed"},
		{"stubborn", Stopped, "SIGTERM, then SIGKILL after its stop timeout (300ms)"},
	}
	if len(rep.Apps) != len(want) || rep.NodeRunning {
		t.Errorf("report = %+v, want %d apps and no node", rep, len(want))
	}
	for i, w := range want {
		if i >= len(rep.Apps) {
			break
		}
		got := rep.Apps[i]
		if got.App != w.id || got.Outcome != w.outcome || !strings.HasPrefix(got.Detail, w.detail) {
			t.Errorf("result %d = %s, want %s: %s (%s…)", i, got, w.id, w.outcome, w.detail)
		}
	}
	if got, _ := resultOf(rep, "lost"); !strings.HasSuffix(got.Detail, "found by its REAPER_APP marker, its pid file was gone") || got.PID != pids["lost"] {
		t.Errorf("lost: %s, want its pid %d and how it was found", got, pids["lost"])
	}
	for id, pid := range pids {
		if running(pid) {
			t.Errorf("%s (pid %d) still runs", id, pid)
		}
	}
	for _, pid := range []int{stranger, other} {
		if !running(pid) {
			t.Errorf("pid %d, not reaper's, was stopped", pid)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(d.pidDir, "*"+pidSuffix)); len(left) != 0 {
		t.Errorf("pid files left: %v", left)
	}
}

// writeStalePidFiles writes the pid file of a process that exited (exited), and one
// whose pid another program took (reused).
func writeStalePidFiles(t *testing.T, pidDir string) {
	t.Helper()
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	cmdline := []string{"x"}
	self, _ := readStat(os.Getpid())
	for id, rec := range map[string]pidRecord{
		"exited": {PID: done.Process.Pid, PGID: done.Process.Pid, StartTicks: 1, Command: cmdline},
		"reused": {PID: os.Getpid(), PGID: self.pgrp, StartTicks: self.startTicks + 1, Command: cmdline},
	} {
		if err := writePidFile(pidDir, id, rec); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStopApps_RefusesWhileANodeRuns(t *testing.T) {
	dataDir := t.TempDir()
	cfg := demo(t, "hello", freeport.Addr(t))
	d, _ := newDriver(t, dataDir, cfg)
	r := watch(t, d)
	start(t, d, "hello")
	r.untilState(t, "hello", paas.StateShouldBeUp)
	pid, _ := procOf(d, "hello")

	rep, err := StopApps(context.Background(), StopOptions{DataDir: dataDir, Apps: []AppConfig{cfg}})
	if !errors.Is(err, ErrNodeRunning) || !rep.NodeRunning || !slices.Equal(rep.NodePIDs, []int{os.Getpid()}) || len(rep.Apps) != 0 {
		t.Fatalf("StopApps = %+v, %v; want ErrNodeRunning, the node's pid %d and nothing stopped", rep, err, os.Getpid())
	}
	if !running(pid) {
		t.Fatal("the app was stopped")
	}

	rep = stopApps(t, StopOptions{DataDir: dataDir, Apps: []AppConfig{cfg}, Force: true})
	if got, _ := resultOf(rep, "hello"); !rep.NodeRunning || got.Outcome != Stopped {
		t.Fatalf("forced StopApps = %+v, want the app stopped and the node reported", rep)
	}
	// The node sees a crash: down, its deployment still OK, so the next request wakes it.
	expectDeployment(t, r.untilState(t, "hello", paas.StateShouldBeDown), paas.StateShouldBeDown, paas.DeploymentOK, "DEPLOY")
}

func TestNew_FailsWhileStopAppsHoldsTheDataDirectory(t *testing.T) {
	dataDir := t.TempDir()
	pidDir := filepath.Join(dataDir, "process")
	if err := os.MkdirAll(pidDir, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, held, err := lockExclusive(pidDir)
	if err != nil || held {
		t.Fatalf("lockExclusive: %v, held %v", err, held)
	}
	if _, err := New(Options{DataDir: dataDir}); !errors.Is(err, ErrStopping) {
		t.Fatalf("New = %v, want ErrStopping", err)
	}
	_ = lock.Close()
	d, err := New(Options{DataDir: dataDir})
	if err != nil {
		t.Fatalf("New once the lock is released: %v", err)
	}
	_ = d.Close()
}

func TestStopApps_NoDataDirectoryIsNothingToStop(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "never")
	rep := stopApps(t, StopOptions{DataDir: dataDir})
	if len(rep.Apps) != 0 || rep.NodeRunning || rep.Failed() {
		t.Errorf("report = %+v, want empty", rep)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("StopApps created the data directory: %v", err)
	}
}

func TestStopResult_String(t *testing.T) {
	for _, tc := range []struct {
		r    StopResult
		want string
	}{
		{StopResult{App: "hello", PID: 42, Outcome: Stopped, Detail: "SIGTERM, gone after 3ms"}, "hello: stopped (pid 42, SIGTERM, gone after 3ms)"},
		{StopResult{App: "x", Outcome: NotOurs, Detail: "unreadable pid file"}, "x: refused: not ours (unreadable pid file)"},
		{StopResult{App: "y", Outcome: NotRunning}, "y: not running"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

//go:build linux

package process

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/paas"
)

func TestAdopt_RestartedDriverAdoptsARunningApp(t *testing.T) {
	dataDir := t.TempDir()
	addr := freeport.Addr(t)
	cfg := demo(t, "kept", addr)
	a, _ := newDriver(t, dataDir, cfg)
	ra := watch(t, a)
	start(t, a, "kept")
	ra.untilState(t, "kept", paas.StateShouldBeUp)
	upA := observe(t, a, "kept")
	pid, _ := procOf(a, "kept")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !running(pid) {
		t.Fatal("closing the driver stopped the app")
	}

	b, blog := newDriver(t, dataDir, cfg)
	rb := watch(t, b)
	obs := observe(t, b, "kept")
	expectDeployment(t, obs, paas.StateShouldBeUp, paas.DeploymentOK, "DEPLOY")
	if !obs.Deployment.At.Equal(upA.Deployment.At) {
		t.Errorf("adopted deployment At = %v, want the first start %v", obs.Deployment.At, upA.Deployment.At)
	}
	start(t, b, "kept")
	if got, _ := procOf(b, "kept"); got != pid {
		t.Errorf("adopted pid = %d, want %d", got, pid)
	}
	if n := countProcs(t, markerOf(cfg)); n != 1 {
		t.Errorf("%d processes of the app run, want 1", n)
	}

	stop(t, b, "kept")
	if running(pid) {
		t.Fatal("the adopted app survived Stop")
	}
	expectDeployment(t, observe(t, b, "kept"), paas.StateShouldBeDown, paas.DeploymentOK, "UNDEPLOY")
	if evs := rb.events("kept"); len(evs) != 1 || evs[0].state != paas.StateShouldBeDown {
		t.Errorf("changed calls = %+v, want one (stopped)", evs)
	}
	if _, err := os.Stat(pidPath(b.pidDir, "kept")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file still there: %v", err)
	}
	if t.Failed() {
		t.Logf("second driver's log:\n%s", blog)
	}
}

func TestAdopt_StartingAppIsProbedUntilReady(t *testing.T) {
	dataDir := t.TempDir()
	addr := freeport.Addr(t)
	cfg := demo(t, "slow", addr, "--boot-delay", "700ms")
	a, _ := newDriver(t, dataDir, cfg)
	start(t, a, "slow")
	_ = a.Close()

	b, _ := newDriver(t, dataDir, cfg)
	r := watch(t, b)
	expectDeployment(t, observe(t, b, "slow"), paas.StateWantsToBeUp, paas.DeploymentWIP, "DEPLOY")
	r.untilState(t, "slow", paas.StateShouldBeUp)
}

func TestAdopt_AdoptedAppKilledByHandIsDown(t *testing.T) {
	dataDir := t.TempDir()
	addr := freeport.Addr(t)
	cfg := demo(t, "gone", addr)
	a, _ := newDriver(t, dataDir, cfg)
	ra := watch(t, a)
	start(t, a, "gone")
	ra.untilState(t, "gone", paas.StateShouldBeUp)
	pid, _ := procOf(a, "gone")
	_ = a.Close()

	b, _ := newDriver(t, dataDir, cfg)
	r := watch(t, b)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	expectDeployment(t, r.untilState(t, "gone", paas.StateShouldBeDown), paas.StateShouldBeDown, paas.DeploymentOK, "DEPLOY")
	if _, err := os.Stat(pidPath(b.pidDir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file still there: %v", err)
	}
}

// sleeper starts a process in its own group that the test owns, killed at the end.
func sleeper(t *testing.T) (pid int, ticks uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	st, err := readStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, st.startTicks
}

func TestAdopt_UntrustedPidFilesSignalNothing(t *testing.T) {
	dataDir := t.TempDir()
	pidDir := filepath.Join(dataDir, "process")
	if err := os.MkdirAll(pidDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmdline := []string{"sleep", "1000"}
	apps := []AppConfig{}
	for _, id := range []string{"exited", "reused", "garbage", "changed"} {
		apps = append(apps, AppConfig{ID: id, Command: cmdline, Ready: ReadyConfig{TCP: "127.0.0.1:1"}})
	}
	write := func(id string, rec pidRecord) {
		t.Helper()
		if err := writePidFile(pidDir, id, rec); err != nil {
			t.Fatal(err)
		}
	}

	// A process that has exited (and was collected).
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	write("exited", pidRecord{PID: done.Process.Pid, PGID: done.Process.Pid, StartTicks: 1, Command: cmdline})
	// A pid now used by another program: this test's own, with another start time.
	self, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	write("reused", pidRecord{PID: os.Getpid(), PGID: self.pgrp, StartTicks: self.startTicks + 1, Command: cmdline})
	// Not a pid file at all, and a write cut short.
	for name, content := range map[string]string{"garbage.pid": "{not json", tmpPrefix + "x-123": "{}"} {
		if err := os.WriteFile(filepath.Join(pidDir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Live processes of reaper that must be left alone: one whose configured command
	// changed, one of an app no longer configured.
	changedPid, changedTicks := sleeper(t)
	write("changed", pidRecord{PID: changedPid, PGID: changedPid, StartTicks: changedTicks, Command: []string{"sleep", "999"}})
	orphanPid, orphanTicks := sleeper(t)
	write("removed-app", pidRecord{PID: orphanPid, PGID: orphanPid, StartTicks: orphanTicks, Command: cmdline})

	d, lb := newDriver(t, dataDir, apps...)
	for _, line := range []string{
		`msg="removed a stale pid file" app=exited pid=` + strconv.Itoa(done.Process.Pid) + ` why="the process is gone"`,
		`msg="removed a stale pid file" app=reused pid=` + strconv.Itoa(os.Getpid()) + ` why="its pid now belongs to another process (the start time differs)"`,
		`msg="removed an unreadable pid file"`,
		`msg="the app runs with another command than the configured one: left alone, not adopted (stop it by hand)" app=changed`,
		`msg="an app that is no longer configured is still running: left alone" app=removed-app`,
	} {
		if !strings.Contains(lb.String(), line) {
			t.Errorf("the log lacks %s", line)
		}
	}

	if names := dirNames(t, pidDir, lockName); len(names) != 2 || names[0] != "changed.pid" || names[1] != "removed-app.pid" {
		t.Errorf("pid files left: %v, want those of the live processes only", names)
	}
	for _, id := range []string{"exited", "reused", "garbage", "changed"} {
		if obs := observe(t, d, id); obs.State != paas.StateShouldBeDown || obs.Deployment != nil {
			t.Errorf("%s: %s, want SHOULD_BE_DOWN and no deployment", id, describe(obs))
		}
	}
	// Nothing was signalled: this test still runs, and the left-alone processes do
	// not exit (a signal sent by New would end them well within the wait).
	for _, pid := range []int{changedPid, orphanPid} {
		if exitsWithin(t, pid, 100*time.Millisecond) {
			t.Errorf("left-alone process %d was stopped", pid)
		}
	}
}

// exitsWithin waits on a pidfd for pid to exit, at most d.
func exitsWithin(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	exited, err := pollReadable(fd, d)
	if err != nil {
		t.Fatal(err)
	}
	return exited
}

// pollReadable waits up to d for fd to be readable. The Go runtime's own
// signals (preemption) interrupt poll with EINTR: the wait goes on with what is
// left of it.
func pollReadable(fd int, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(max(time.Until(deadline), 0).Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return n > 0, err
	}
}

func mustPidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// waitReadable waits for the process of pidfd fd to exit.
func waitReadable(t *testing.T, fd int) {
	t.Helper()
	if exited, err := pollReadable(fd, waitLong); err != nil || !exited {
		t.Fatalf("the process did not exit: %v, %v", exited, err)
	}
}

// dirNames lists the names in dir, sorted, but for those in except.
func dirNames(t *testing.T, dir string, except ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !slices.Contains(except, e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

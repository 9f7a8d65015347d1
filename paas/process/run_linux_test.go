package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/paas"
)

func TestDriver_StopEndsTheWholeGroup(t *testing.T) {
	addr := freeport.Addr(t)
	childFile := filepath.Join(t.TempDir(), "child.pid")
	cfg := AppConfig{
		ID: "group",
		// The app starts a process of its own, which must go with it.
		Command: []string{"sh", "-c", `sleep 1000 & echo $! > "$0"; exec "$1" --listen "$2"`, childFile, demoapp, addr},
		Ready:   ReadyConfig{TCP: addr},
	}
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)
	stop(t, d, "group") // not running: nothing to do
	if obs := observe(t, d, "group"); obs.State != paas.StateShouldBeDown || obs.Deployment != nil || len(r.events("group")) != 0 {
		t.Fatalf("Stop of an app never started: %s", describe(obs))
	}
	start(t, d, "group")
	r.untilState(t, "group", paas.StateShouldBeUp)
	pid, _ := procOf(d, "group")
	b, err := os.ReadFile(childFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !running(child) {
		t.Fatalf("grandchild %q not running", b)
	}
	t.Cleanup(func() {
		if running(child) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	})

	calls := len(r.events("group"))
	before := time.Now()
	stop(t, d, "group")
	if running(pid) || running(child) {
		t.Fatalf("after Stop: app running %v, its child running %v; want both gone", running(pid), running(child))
	}
	obs := observe(t, d, "group")
	expectDeployment(t, obs, paas.StateShouldBeDown, paas.DeploymentOK, "UNDEPLOY")
	if obs.Deployment.At.Before(before) || obs.Deployment.At.After(time.Now()) {
		t.Errorf("UNDEPLOY At = %v, want the stop time", obs.Deployment.At)
	}
	if evs := r.events("group"); len(evs) != calls+1 || evs[len(evs)-1].state != paas.StateShouldBeDown {
		t.Errorf("changed calls after stop: %+v, want one more, down", evs[calls:])
	}
	if _, err := os.Stat(pidPath(d.pidDir, "group")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file still there: %v", err)
	}
	stop(t, d, "group") // idempotent
	if got := observe(t, d, "group"); got.Deployment.Action != "UNDEPLOY" || len(r.events("group")) != calls+1 {
		t.Errorf("a second Stop changed something: %s", describe(got))
	}
}

func TestDriver_StopEscalatesToSIGKILL(t *testing.T) {
	addr := freeport.Addr(t)
	cfg := demo(t, "stubborn", addr, "--ignore-sigterm")
	cfg.StopTimeout = conf.Duration(300 * time.Millisecond)
	cfg.LogFile = filepath.Join(t.TempDir(), "stubborn.log")
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)
	start(t, d, "stubborn")
	r.untilState(t, "stubborn", paas.StateShouldBeUp)
	pid, _ := procOf(d, "stubborn")

	began := time.Now()
	stop(t, d, "stubborn")
	took := time.Since(began)
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("Stop took %s, want the 300ms stop timeout then SIGKILL", took)
	}
	if running(pid) {
		t.Fatal("the app survived the stop")
	}
	if b, _ := os.ReadFile(cfg.LogFile); !strings.Contains(string(b), "ignoring SIGTERM") {
		t.Errorf("the app did not get SIGTERM first; its log:\n%s", b)
	}
	expectDeployment(t, observe(t, d, "stubborn"), paas.StateShouldBeDown, paas.DeploymentOK, "UNDEPLOY")
}

func TestDriver_StopSignalIsConfigurable(t *testing.T) {
	addr := freeport.Addr(t)
	// demoapp ignores SIGTERM but stops on SIGINT: a stop well under the timeout
	// proves SIGINT was sent.
	cfg := demo(t, "int", addr, "--ignore-sigterm")
	cfg.StopSignal = "int"
	cfg.StopTimeout = conf.Duration(5 * time.Second)
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)
	start(t, d, "int")
	r.untilState(t, "int", paas.StateShouldBeUp)
	began := time.Now()
	stop(t, d, "int")
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("Stop took %s: SIGINT did not stop the app", took)
	}
}

func TestDriver_ExitBeforeReadyFails(t *testing.T) {
	cases := []struct {
		name, script, cause string
	}{
		{"status", `echo starting; echo "boom: config missing" >&2; exit 3`,
			"exited with status 3 before it was ready; last output:\nstarting\nboom: config missing"},
		{"signal", `kill -9 $$`, "killed by signal 9 (SIGKILL) before it was ready"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "app.log")
			// An earlier run's output must not be quoted.
			if err := os.WriteFile(logFile, []byte("an earlier run\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := AppConfig{ID: "crash", Command: []string{"sh", "-c", tc.script}, LogFile: logFile,
				Ready: ReadyConfig{TCP: freeport.Addr(t)}}
			d, _ := newDriver(t, "", cfg)
			r := watch(t, d)
			start(t, d, "crash")
			obs := r.untilState(t, "crash", paas.StateShouldBeDown)
			expectDeployment(t, obs, paas.StateShouldBeDown, paas.DeploymentFail, "DEPLOY")
			if obs.Deployment.Cause != tc.cause {
				t.Errorf("cause = %q, want %q", obs.Deployment.Cause, tc.cause)
			}
			if _, err := os.Stat(pidPath(d.pidDir, "crash")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("pid file still there: %v", err)
			}
		})
	}
}

func TestDriver_AppKilledByHandIsDown(t *testing.T) {
	addr := freeport.Addr(t)
	d, _ := newDriver(t, "", demo(t, "victim", addr))
	r := watch(t, d)
	start(t, d, "victim")
	up := r.untilState(t, "victim", paas.StateShouldBeUp)
	pid, _ := procOf(d, "victim")

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	down := r.untilState(t, "victim", paas.StateShouldBeDown)
	// Down, but the deployment stays OK: the next request wakes the app.
	expectDeployment(t, down, paas.StateShouldBeDown, paas.DeploymentOK, "DEPLOY")
	if !down.Deployment.At.Equal(up.Deployment.At) {
		t.Errorf("deployment changed: %v, want %v", down.Deployment.At, up.Deployment.At)
	}
	if _, err := os.Stat(pidPath(d.pidDir, "victim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file still there: %v", err)
	}

	start(t, d, "victim")
	r.untilState(t, "victim", paas.StateShouldBeUp)
	if again, _ := procOf(d, "victim"); again == pid || again == 0 {
		t.Errorf("restarted pid %d, want a new process", again)
	}
}

func TestDriver_StartDuringStopWaitsThenStartsAgain(t *testing.T) {
	addr := freeport.Addr(t)
	cfg := demo(t, "bounce", addr, "--ignore-sigterm")
	cfg.StopTimeout = conf.Duration(500 * time.Millisecond)
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)
	start(t, d, "bounce")
	r.untilState(t, "bounce", paas.StateShouldBeUp)
	pid, _ := procOf(d, "bounce")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Stop(ctx, paas.App{ID: "bounce"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop with a short context: %v, want its deadline", err)
	}
	// Still up while its group lives.
	if obs := observe(t, d, "bounce"); obs.State != paas.StateShouldBeUp {
		t.Errorf("during the stop: %s, want still SHOULD_BE_UP", describe(obs))
	}
	start(t, d, "bounce") // waits for the stop (SIGKILL at 500ms), then spawns
	if running(pid) {
		t.Error("the old process still runs")
	}
	if again, _ := procOf(d, "bounce"); again == pid || again == 0 {
		t.Errorf("pid after restart = %d, want a new process", again)
	}
	r.untilState(t, "bounce", paas.StateShouldBeUp)
}

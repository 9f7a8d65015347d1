//go:build linux

package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

func TestDriver_StartBecomesReadyAndIsPushed(t *testing.T) {
	addr := freeport.Addr(t)
	cfg := demo(t, "hello", addr, "--boot-delay", "400ms")
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)

	if obs := observe(t, d, "hello"); obs.State != paas.StateShouldBeDown || obs.Deployment != nil {
		t.Fatalf("before start: %s, want SHOULD_BE_DOWN and no deployment", describe(obs))
	}
	before := time.Now()
	start(t, d, "hello")
	after := time.Now()
	obs := observe(t, d, "hello")
	expectDeployment(t, obs, paas.StateWantsToBeUp, paas.DeploymentWIP, "DEPLOY")
	if at := obs.Deployment.At; at.Before(before) || at.After(after) {
		t.Errorf("deployment At = %v, want the spawn time", at)
	}
	if evs := r.events("hello"); len(evs) != 1 || evs[0].state != paas.StateWantsToBeUp {
		t.Errorf("after Start, changed calls = %+v, want one (spawned)", evs)
	}

	// The test watches the port on its own, to know when it opened.
	opened := make(chan time.Time, 1)
	go func() {
		var at time.Time
		if testwait.Until(waitLong, func() bool {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false
			}
			at = time.Now()
			_ = c.Close()
			return true
		}) {
			opened <- at
		}
		close(opened)
	}()
	up := r.untilState(t, "hello", paas.StateShouldBeUp)
	expectDeployment(t, up, paas.StateShouldBeUp, paas.DeploymentOK, "DEPLOY")
	if !up.Deployment.At.Equal(obs.Deployment.At) {
		t.Errorf("ready deployment At = %v, want the spawn time %v", up.Deployment.At, obs.Deployment.At)
	}
	openAt, ok := <-opened
	if !ok {
		t.Fatal("the port never opened")
	}
	var readyAt time.Time
	for _, e := range r.events("hello") {
		if e.state == paas.StateShouldBeUp {
			readyAt = e.at
			break
		}
	}
	// The probe runs every 2ms at first (package probe's tests check the schedule): a
	// generous bound, so that a loaded machine does not fail it, that polling every
	// second or so would still break.
	lag := readyAt.Sub(openAt)
	t.Logf("readiness pushed %s after the port opened", lag)
	if lag > 400*time.Millisecond {
		t.Errorf("readiness pushed %s after the port opened, want within a few probe intervals", lag)
	}
}

func TestDriver_StartIsIdempotent(t *testing.T) {
	addr := freeport.Addr(t)
	cfg := demo(t, "idem", addr)
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- d.Start(context.Background(), paas.App{ID: "idem"}) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	pid, _ := procOf(d, "idem")
	r.untilState(t, "idem", paas.StateShouldBeUp)
	start(t, d, "idem") // on a running app
	if again, _ := procOf(d, "idem"); again != pid {
		t.Errorf("pid changed from %d to %d", pid, again)
	}
	if n := countProcs(t, markerOf(cfg)); n != 1 {
		t.Errorf("%d processes of the app run, want 1", n)
	}
	rec, err := readPidFile(pidPath(d.pidDir, "idem"))
	if err != nil || rec.PID != pid || rec.PGID != pid || rec.StartTicks == 0 || rec.Command[0] != demoapp {
		t.Errorf("pid file = %+v, %v; want pid %d", rec, err, pid)
	}
}

func TestDriver_StartFailuresAreReported(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		cfg    AppConfig
		reason string
	}{
		{"missing program", AppConfig{Command: []string{filepath.Join(dir, "nope")}},
			"fork/exec " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"not in PATH", AppConfig{Command: []string{"reaper-no-such-program"}},
			`exec: "reaper-no-such-program": executable file not found in $PATH`},
		{"not executable", AppConfig{Command: []string{notExec}},
			"fork/exec " + notExec + ": permission denied"},
		{"bad dir", AppConfig{Command: []string{"sh", "-c", "exit 0"}, Dir: filepath.Join(dir, "missing")},
			"chdir " + filepath.Join(dir, "missing") + ": no such file or directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.ID = "broken"
			cfg.Ready = ReadyConfig{TCP: freeport.Addr(t)}
			d, _ := newDriver(t, "", cfg)
			r := watch(t, d)
			err := d.Start(context.Background(), paas.App{ID: "broken"})
			if !errors.Is(err, paas.ErrStartFailed) {
				t.Fatalf("Start: %v, want paas.ErrStartFailed", err)
			}
			if want := "process: start broken: paas: app could not be started: " + tc.reason; err.Error() != want {
				t.Errorf("error = %q\nwant    %q", err, want)
			}
			obs := observe(t, d, "broken")
			expectDeployment(t, obs, paas.StateShouldBeDown, paas.DeploymentFail, "DEPLOY")
			if obs.Deployment.Cause != tc.reason {
				t.Errorf("cause = %q, want %q", obs.Deployment.Cause, tc.reason)
			}
			if n := len(r.events("broken")); n != 1 {
				t.Errorf("changed called %d times, want 1", n)
			}
		})
	}
}

func TestDriver_PortAlreadyTakenFailsTheStart(t *testing.T) {
	// Another program listens where the app should: the probe would pass at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	cfg := demo(t, "taken", addr)
	d, _ := newDriver(t, "", cfg)
	err = d.Start(context.Background(), paas.App{ID: "taken"})
	// The cause names the port and the program that holds it: this test.
	reason := fmt.Sprintf("%s already answers before the app is started: another program holds its port (port %d: pid %d, ",
		addr, ln.Addr().(*net.TCPAddr).Port, os.Getpid())
	if !errors.Is(err, paas.ErrStartFailed) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("Start: %v, want paas.ErrStartFailed: %s", err, reason)
	}
	obs := observe(t, d, "taken")
	expectDeployment(t, obs, paas.StateShouldBeDown, paas.DeploymentFail, "DEPLOY")
	if c := obs.Deployment.Cause; !strings.HasPrefix(c, reason) || !strings.Contains(c, "; not the app reaper started: ") {
		t.Errorf("cause = %q, want %s…; not the app reaper started: …", c, reason)
	}
	if n := countProcs(t, markerOf(cfg)); n != 0 {
		t.Errorf("%d processes of the app started, want none", n)
	}
}

func TestDriver_EnvironmentIsMinimal(t *testing.T) {
	t.Setenv("REAPER_ADMIN_TOKEN", "x")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TZ", "UTC")
	cases := []struct {
		name    string
		inherit []string
		env     map[string]string
		want    []string
		absent  []string
	}{
		{"default", nil, map[string]string{"GREETING": "hi", "TZ": "Europe/Paris"},
			append(inherited("TZ"), "GREETING=hi", "TZ=Europe/Paris"),
			[]string{"REAPER_ADMIN_TOKEN", "TZ=UTC"}},
		// The marker (MarkerEnv) wins over the app's env: it is reaper's proof.
		{"nothing inherited", []string{}, map[string]string{"A": "1", MarkerEnv: "forged"},
			[]string{"A=1"}, []string{"REAPER_ADMIN_TOKEN", "PATH", "LANG", MarkerEnv + "=forged"}},
		{"named", []string{"REAPER_ADMIN_TOKEN"}, nil,
			[]string{"REAPER_ADMIN_TOKEN=x"}, []string{"PATH", "LANG"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "env.log")
			cfg := AppConfig{ID: "env", Command: []string{"/usr/bin/env"}, Env: tc.env, InheritEnv: tc.inherit,
				LogFile: logFile, Ready: ReadyConfig{TCP: freeport.Addr(t)}}
			d, _ := newDriver(t, "", cfg)
			r := watch(t, d)
			start(t, d, "env")
			r.untilState(t, "env", paas.StateShouldBeDown)
			want := append(slices.Clone(tc.want), MarkerEnv+"="+d.key+"/env")
			b, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			for _, w := range want {
				if !containsLine(lines, w) {
					t.Errorf("the app's environment lacks %s:\n%s", w, b)
				}
			}
			for _, a := range tc.absent {
				for _, l := range lines {
					if l == a || (!strings.Contains(a, "=") && strings.HasPrefix(l, a+"=")) {
						t.Errorf("the app's environment has %s", l)
					}
				}
			}
			if len(lines) != len(want) {
				t.Errorf("the app's environment has %d variables, want %d:\n%s", len(lines), len(want), b)
			}
		})
	}
}

// inherited returns the default inherited variables set in the test's environment,
// but for those named in except.
func inherited(except ...string) []string {
	var out []string
	for _, k := range DefaultInheritEnv {
		if v, ok := os.LookupEnv(k); ok && !slices.Contains(except, k) {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func containsLine(lines []string, s string) bool { return slices.Contains(lines, s) }

func TestDriver_HTTPReadiness(t *testing.T) {
	addr := freeport.Addr(t)
	cfg := demo(t, "web", addr, "--boot-delay", "100ms")
	cfg.Ready = ReadyConfig{HTTP: "http://" + addr + "/healthz", Interval: conf.Duration(10 * time.Millisecond)}
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)
	start(t, d, "web")
	expectDeployment(t, r.untilState(t, "web", paas.StateShouldBeUp), paas.StateShouldBeUp, paas.DeploymentOK, "DEPLOY")
}

func TestDriver_UnknownAppIsNotFound(t *testing.T) {
	d, _ := newDriver(t, "", AppConfig{ID: "a", Command: []string{"true"}, Ready: ReadyConfig{TCP: "127.0.0.1:1"}})
	ctx := context.Background()
	app := paas.App{ID: "nope"}
	if _, err := d.Observe(ctx, app); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("Observe: %v", err)
	}
	if err := d.Start(ctx, app); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("Start: %v", err)
	}
	if err := d.Stop(ctx, app); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("Stop: %v", err)
	}
}

func TestDriver_WatchEndsWithItsContext(t *testing.T) {
	d, _ := newDriver(t, "", AppConfig{ID: "w", Command: []string{"sh", "-c", "exit 1"}, Ready: ReadyConfig{TCP: freeport.Addr(t)}})
	r := watch(t, d)
	var mu sync.Mutex
	var late []string
	ctx, cancel := context.WithCancel(context.Background())
	d.Watch(ctx, func(id string) {
		mu.Lock()
		late = append(late, id)
		mu.Unlock()
	})
	cancel()
	// context.AfterFunc runs the removal in its own goroutine: wait for it.
	var n int
	if !testwait.Until(waitLong, func() bool {
		n = d.watchers.Len()
		return n == 1
	}) {
		t.Fatalf("%d watchers, want 1", n)
	}
	start(t, d, "w")
	r.untilState(t, "w", paas.StateShouldBeDown)
	if evs := r.events("w"); len(evs) != 2 {
		t.Errorf("live watcher got %d calls, want 2 (spawned, exited)", len(evs))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(late) != 0 {
		t.Errorf("a watcher whose context ended was called: %v", late)
	}
}

func TestDriver_ClosedDriverRefuses(t *testing.T) {
	d, _ := newDriver(t, "", AppConfig{ID: "c", Command: []string{"true"}, Ready: ReadyConfig{TCP: "127.0.0.1:1"}})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background(), paas.App{ID: "c"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	if err := d.Stop(context.Background(), paas.App{ID: "c"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Stop after Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNew_RefusesInvalidConfiguration(t *testing.T) {
	_, err := New(Options{DataDir: t.TempDir(), Apps: []AppConfig{
		{ID: "a", Command: []string{"true"}, Ready: ReadyConfig{TCP: "127.0.0.1:1"}},
		{ID: "a", Command: []string{"true"}},
	}})
	want := "process: invalid configuration:\n" +
		"paas.apps[1].ready: give exactly one of tcp, http, postgres or redis\n" +
		`paas.apps[1].id: "a" is already the id of paas.apps[0]`
	if err == nil || err.Error() != want {
		t.Errorf("New: %v\nwant %s", err, want)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without DataDir: no error")
	}
}

func TestDriver_RelativeCommandRunsInDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "app"), []byte("#!/bin/sh\npwd\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "app.log")
	cfg := AppConfig{ID: "rel", Command: []string{"./bin/app"}, Dir: dir, LogFile: logFile, Ready: ReadyConfig{TCP: freeport.Addr(t)}}
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)
	start(t, d, "rel")
	obs := r.untilState(t, "rel", paas.StateShouldBeDown)
	if want := "exited with status 0 before it was ready; last output:\n" + dir; obs.Deployment.Cause != want {
		t.Errorf("cause = %q, want %q", obs.Deployment.Cause, want)
	}
}

// An app's busy_url and busy_max are its hint for the engine
// (paas.PolicyHinter); an app without one, or unknown, has none.
func TestDriver_BusyURLIsTheAppsHint(t *testing.T) {
	d, err := New(Options{DataDir: t.TempDir(), Apps: []AppConfig{
		{ID: "worker", Command: []string{"true"}, Ready: ReadyConfig{TCP: "127.0.0.1:1"},
			BusyURL: "http://127.0.0.1:3001/busy", BusyMax: conf.Duration(10 * time.Minute)},
		{ID: "web", Command: []string{"true"}, Ready: ReadyConfig{TCP: "127.0.0.1:1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want := paas.PolicyHint{BusyURL: "http://127.0.0.1:3001/busy", BusyMax: 10 * time.Minute, BusyFrom: "config paas.apps[].busy_url"}
	if h, err := d.AppPolicy(paas.App{ID: "worker"}); !reflect.DeepEqual(h, want) || err != nil {
		t.Errorf("worker: %+v, %v; want %+v", h, err, want)
	}
	for _, id := range []string{"web", "nope"} {
		if h, err := d.AppPolicy(paas.App{ID: id}); !reflect.DeepEqual(h, paas.PolicyHint{}) || err != nil {
			t.Errorf("%s: %+v, %v; want no hint", id, h, err)
		}
	}
}

//go:build linux

package process

import (
	"context"
	"fmt"
	"github.com/reapergw/reaper/internal/logtest"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

// demoapp is the path of the demo app binary built by TestMain.
var demoapp string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reaper-process-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	demoapp = filepath.Join(dir, "demoapp")
	out, err := exec.Command("go", "build", "-o", demoapp, "github.com/reapergw/reaper/cmd/demoapp").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the demo app: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// waitLong bounds every wait of these tests: generous, since the machine is shared.
const waitLong = 10 * time.Second

// demo configures the demo app listening on addr, named id plus a unique marker so
// that tests can count its processes.
func demo(t *testing.T, id, addr string, flags ...string) AppConfig {
	marker := fmt.Sprintf("%s-%d", id, time.Now().UnixNano())
	return AppConfig{
		ID:      id,
		Command: append([]string{demoapp, "--listen", addr, "--name", marker}, flags...),
		Ready:   ReadyConfig{TCP: addr},
	}
}

func testLogger(t *testing.T) (*slog.Logger, *logtest.Buffer) {
	lb := &logtest.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("driver log:\n%s", lb)
		}
	})
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// newDriver returns a driver on dataDir (a new temporary one when empty). When the
// test ends it is closed and every process group it still knows is killed.
func newDriver(t *testing.T, dataDir string, apps ...AppConfig) (*Driver, *logtest.Buffer) {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	logger, lb := testLogger(t)
	d, err := New(Options{DataDir: dataDir, Apps: apps, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Close()
		killLeftovers(d)
	})
	return d, lb
}

// killLeftovers kills the process groups d still knows, if their leader is still the
// process d started (never a stranger that took a pid).
func killLeftovers(d *Driver) {
	for _, a := range d.apps {
		a.mu.Lock()
		p := a.proc
		a.mu.Unlock()
		if p == nil {
			continue
		}
		if st, err := readStat(p.pid); err == nil && st.startTicks == p.startTicks {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
	}
}

// procOf returns the pid of the app's process, 0 when none.
func procOf(d *Driver, id string) (pid, pgid int) {
	a := d.apps[id]
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == nil {
		return 0, 0
	}
	return a.proc.pid, a.proc.pgid
}

// recorder is a watcher: it records calls and the observation at each.
type recorder struct {
	d    *Driver
	mu   sync.Mutex
	evs  []event
	kick chan struct{}
}

type event struct {
	id    string
	at    time.Time
	state paas.State
}

func watch(t *testing.T, d *Driver) *recorder {
	r := &recorder{d: d, kick: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d.Watch(ctx, r.changed)
	return r
}

func (r *recorder) changed(id string) {
	at := time.Now()
	obs, _ := r.d.Observe(context.Background(), paas.App{ID: id})
	r.mu.Lock()
	r.evs = append(r.evs, event{id: id, at: at, state: obs.State})
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *recorder) events(id string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.evs {
		if e.id == id {
			out = append(out, e)
		}
	}
	return out
}

// until waits, woken by the driver's notifications, until cond holds for the app's
// observation, and returns that observation.
func (r *recorder) until(t *testing.T, id string, what string, cond func(paas.Observation) bool) paas.Observation {
	t.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		obs, err := r.d.Observe(context.Background(), paas.App{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if cond(obs) {
			return obs
		}
		select {
		case <-r.kick:
		case <-deadline.C:
			t.Fatalf("%s: still %s after %s", what, describe(obs), waitLong)
		}
	}
}

func (r *recorder) untilState(t *testing.T, id string, s paas.State) paas.Observation {
	t.Helper()
	return r.until(t, id, "waiting for "+string(s), func(o paas.Observation) bool { return o.State == s })
}

func describe(o paas.Observation) string {
	if o.Deployment == nil {
		return string(o.State) + " (no deployment)"
	}
	return fmt.Sprintf("%s (%s %s, cause %q)", o.State, o.Deployment.State, o.Deployment.Action, o.Deployment.Cause)
}

func observe(t *testing.T, d *Driver, id string) paas.Observation {
	t.Helper()
	obs, err := d.Observe(context.Background(), paas.App{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func start(t *testing.T, d *Driver, id string) {
	t.Helper()
	if err := d.Start(context.Background(), paas.App{ID: id}); err != nil {
		t.Fatalf("Start(%s): %v", id, err)
	}
}

func stop(t *testing.T, d *Driver, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := d.Stop(ctx, paas.App{ID: id}); err != nil {
		t.Fatalf("Stop(%s): %v", id, err)
	}
}

// running reports whether pid is a live process (a zombie has exited).
func running(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.alive()
}

// countProcs counts the live processes whose command line holds marker.
func countProcs(t *testing.T, marker string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !running(pid) {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(b), marker) {
			n++
		}
	}
	return n
}

// markerOf returns the --name value of a demo app's command.
func markerOf(c AppConfig) string {
	for i, a := range c.Command {
		if a == "--name" && i+1 < len(c.Command) {
			return c.Command[i+1]
		}
	}
	return ""
}

// expectDeployment checks a deployment's state and action.
func expectDeployment(t *testing.T, obs paas.Observation, state paas.State, dep paas.DeploymentState, action string) {
	t.Helper()
	if obs.State != state || obs.Deployment == nil || obs.Deployment.State != dep || obs.Deployment.Action != action {
		t.Fatalf("observation = %s, want %s (%s %s)", describe(obs), state, dep, action)
	}
}

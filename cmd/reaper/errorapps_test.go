package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/reaper"
)

// notReady is an app's readiness endpoint that never says ready (503), and
// counts the probes it gets.
func notReady(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		probes.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &probes
}

// neverReadyApp is an app whose process runs and is never ready (its probe asks
// srv, which answers 503), behind a route with the given fail timeout.
func neverReadyApp(id, srv, failTimeout string) (app, route string) {
	app = fmt.Sprintf("    - {id: %s, command: [\"sleep\", \"600\"], ready: {http: %q}, stop_timeout: 3s}\n", id, srv)
	route = fmt.Sprintf("  - {id: %s, frontend: {domains: [%s.test]}, backend: {targets: [\"http://%s\"]},\n"+
		"     plugins: [{plugin: reaper, config: {app_id: %s, grace_period: 10m, fail_timeout: %s}}]}\n", id, id, "127.0.0.1:9", id, failTimeout)
	return app, route
}

// An app whose start never becomes ready goes to Error at its fail timeout;
// from then on nothing probes it (it was probed every 25 ms for as long as it
// stayed in Error), though the job keeps looking at it. A reset probes it
// again at once.
func TestNode_AnAppInErrorIsNotProbed(t *testing.T) {
	srv, probes := notReady(t)
	a, r := neverReadyApp("broken", srv.URL, "1s")
	n := startTestNodeWith(t, a, r)
	n.waitStatus(t, "broken", reaper.StatusDown)
	if res := n.cli(t, "wake", "broken"); res.code != 0 {
		t.Fatalf("reaper wake: %d %s", res.code, res.stderr)
	}
	n.waitStatus(t, "broken", reaper.StatusError)
	inError := n.app(t, "broken")
	before := probes.Load()
	// Probed while it was waking (how often depends on how much of the 1 s
	// the start itself took: nearly all of it on a loaded machine, CI saw 6).
	if before < 1 {
		t.Fatalf("no probe while it was waking")
	}
	// The job looks at every app each second (job_interval): wait for two
	// looks after the one that put it in Error.
	since := *inError.LastCheckAt
	testwait.For(t, 10*time.Second, "the job looks at the app again", func() bool {
		last := n.app(t, "broken").LastCheckAt
		return last != nil && last.Sub(since) >= 2*time.Second
	})
	// One probe may have been in flight as the app went to Error.
	if during := probes.Load() - before; during > 1 {
		t.Errorf("%d probes in 2 s in Error, want none (it was probed %d times while waking)", during, before)
	}
	if res := n.cli(t, "reset", "broken"); res.code != 0 {
		t.Fatalf("reaper reset: %d %s", res.code, res.stderr)
	}
	after := probes.Load()
	testwait.For(t, 10*time.Second, "probes after the reset", func() bool { return probes.Load() > after+5 })
}

// reaper sleep --force stops an app stuck waking, and one in Error, which
// nothing else could stop while the node runs; without --force both are
// refused with the reason and the way out.
func TestSleepCmd_ForceStopsAnAppStuckWakingOrInError(t *testing.T) {
	srv, _ := notReady(t)
	a1, r1 := neverReadyApp("stuck", srv.URL, "60s")
	a2, r2 := neverReadyApp("broken", srv.URL, "1s")
	n := startTestNodeWith(t, a1+a2, r1+r2)
	for _, id := range []string{"stuck", "broken"} {
		n.waitStatus(t, id, reaper.StatusDown)
		if res := n.cli(t, "wake", id); res.code != 0 {
			t.Fatalf("reaper wake %s: %d %s", id, res.code, res.stderr)
		}
	}
	n.waitStatus(t, "stuck", reaper.StatusWaitingForUp)
	n.waitStatus(t, "broken", reaper.StatusError)
	for id, want := range map[string]string{
		"stuck":  "the app is waking up; put it to sleep once it is Up, or --force stops it now",
		"broken": "the app is in Error (did not wake up within the fail timeout): reset it, or --force stops it",
	} {
		pid := appPID(t, n, id)
		if res := n.cli(t, "sleep", id); res.code != exitConflict || !strings.Contains(res.stderr, want) {
			t.Errorf("reaper sleep %s: %d\n%s%s; want exit %d saying %q", id, res.code, res.stdout, res.stderr, exitConflict, want)
		}
		if res := n.cli(t, "sleep", id, "--force"); res.code != 0 {
			t.Fatalf("reaper sleep %s --force: %d\n%s%s", id, res.code, res.stdout, res.stderr)
		}
		n.waitStatus(t, id, reaper.StatusDown)
		testwait.For(t, 10*time.Second, id+"'s process is gone", func() bool { return !alivePID(pid) })
		if app := n.app(t, id); !strings.Contains(app.Cause, "stopped") {
			t.Errorf("%s after the forced sleep: %s (%s)", id, app.Status, app.Cause)
		}
	}
	res := n.cli(t, "history", "broken", "--json")
	if !strings.Contains(res.stdout, "(forced, from Error)") {
		t.Errorf("the history does not say the stop was forced from Error:\n%s", res.stdout)
	}
}

// appPID is the pid of the app's process, from the driver's pid file.
func appPID(t *testing.T, n *testNode, id string) int {
	t.Helper()
	var rec struct {
		PID int `json:"pid"`
	}
	testwait.For(t, 10*time.Second, id+"'s pid file", func() bool {
		b, err := os.ReadFile(filepath.Join(n.dataDir, "process", id+".pid"))
		return err == nil && json.Unmarshal(b, &rec) == nil && rec.PID > 0
	})
	return rec.PID
}

func alivePID(pid int) bool { return syscall.Kill(pid, 0) == nil }

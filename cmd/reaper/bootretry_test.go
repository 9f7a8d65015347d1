package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/reaper"
)

// procApp is one more process app behind a route of its own, with extra
// reaper plugin keys (YAML flow items).
func procApp(id, addr string, command []string, plugin string) (app, route string) {
	q := make([]string, len(command))
	for i, c := range command {
		q[i] = fmt.Sprintf("%q", c)
	}
	app = fmt.Sprintf("    - {id: %s, command: [%s], ready: {tcp: %q}, stop_timeout: 3s}\n", id, strings.Join(q, ", "), addr)
	route = fmt.Sprintf("  - {id: %s, frontend: {domains: [%s.test]}, backend: {targets: [\"http://%s\"]},\n"+
		"     plugins: [{plugin: reaper, config: {app_id: %s, grace_period: 10m, fail_timeout: 30s%s}}]}\n", id, id, addr, id, plugin)
	return app, route
}

// startTimes are the times of the driver's "app started" lines for the app.
func startTimes(t *testing.T, n *testNode, id string) []time.Time {
	t.Helper()
	re := regexp.MustCompile(`time=(\S+) .*msg="app started" .*app=` + id + ` `)
	var out []time.Time
	for _, m := range re.FindAllStringSubmatch(n.logs.String(), -1) {
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, at)
	}
	return out
}

// A start whose process exits before it is ready (here: the port it wants is
// still held, the first time only) is started again after a back-off, and the
// wake ends Up, not in Error for good as it did.
func TestWake_AStartThatExitsBeforeItIsReadyIsRetried(t *testing.T) {
	addr, marker := freeport.Addr(t), filepath.Join(t.TempDir(), "failed-once")
	script := `if [ ! -e "$0" ]; then touch "$0"; echo "listen tcp $1: bind: address already in use" >&2; exit 1; fi; exec "$2" --listen "$1" --name flaky`
	a, r := procApp("flaky", addr, []string{"/bin/sh", "-c", script, marker, addr, demoApp(t)}, "")
	n := startTestNodeWith(t, a, r)
	n.waitStatus(t, "flaky", reaper.StatusDown)
	res := n.cli(t, "wake", "flaky", "--wait", "--timeout", "30s")
	if res.code != 0 || !strings.Contains(res.stdout, "flaky: Up after ") {
		t.Fatalf("reaper wake --wait: %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	app := n.app(t, "flaky")
	if b := app.FailedBoots; b == nil || b.Count != 1 || !strings.Contains(b.Last, "exited with status 1 before it was ready") ||
		!strings.Contains(b.Last, "address already in use") {
		t.Errorf("failed boots after the wake: %+v; want one, saying how it exited and its last output", b)
	}
	starts := startTimes(t, n, "flaky")
	if len(starts) != 2 {
		t.Fatalf("%d starts, want 2 (one that failed, one that worked)", len(starts))
	}
	if gap := starts[1].Sub(starts[0]); gap < reaper.BootBackoff {
		t.Errorf("started again %s after the first start, before the back-off (%s)", gap, reaper.BootBackoff)
	}
	res = n.cli(t, "history", "flaky", "--json")
	if strings.Contains(res.stdout, `"to": "Error"`) {
		t.Errorf("the app went through Error:\n%s", res.stdout)
	}
}

// An app that crashes right after each wake (here held awake, so that each
// crash is woken again at once, as waiting requests do) is started again
// after 1 s, then 2 s, and goes to Error at its third failed boot, with the
// exit status: not started 17 times in 30 s.
func TestWake_ACrashLoopBacksOffThenGoesToErrorWithTheExitStatus(t *testing.T) {
	addr := freeport.Addr(t)
	a, r := procApp("crashy", addr, []string{demoApp(t), "--listen", addr, "--name", "crashy", "--fail-after", "300ms"}, ", max_failed_boots: 3")
	n := startTestNodeWith(t, a, r)
	n.waitStatus(t, "crashy", reaper.StatusDown)
	if res := n.cli(t, "hold", "crashy", "1h"); res.code != 0 {
		t.Fatalf("reaper hold: %d %s", res.code, res.stderr)
	}
	n.waitStatus(t, "crashy", reaper.StatusError)
	app := n.app(t, "crashy")
	if !strings.Contains(app.ErrorCause, "3 failed boots in a row; the last one exited with status 3") {
		t.Errorf("error cause %q, want the count and the last exit status", app.ErrorCause)
	}
	starts := startTimes(t, n, "crashy")
	if len(starts) != 3 {
		t.Fatalf("%d starts, want 3", len(starts))
	}
	// Each start after a crash waits for its back-off: 1 s, then 2 s (plus the
	// 300 ms the app ran).
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if gap := starts[i+1].Sub(starts[i]); gap < want {
			t.Errorf("start %d came %s after the one before, less than its back-off %s", i+2, gap, want)
		}
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/reapergw/reaper/reaper"
)

// stop-apps on a node's configuration: refused while the node runs, done with
// --force (with a warning), and done plainly once the node has stopped, which
// leaves its apps running (they outlive reaper on purpose).
func TestStopApps_StopsTheAppsOfAConfiguration(t *testing.T) {
	n := startTestNode(t)
	if r := n.cli(t, "wake", "hello", "--wait", "--timeout", "30s"); r.code != 0 {
		t.Fatalf("reaper wake: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	dir := filepath.Clean(n.dataDir)

	r := runCLI(t, context.Background(), "stop-apps", "--config", n.config)
	refusal := "reaper stop-apps: refused: a reaper node (pid " + strconv.Itoa(os.Getpid()) + ") is running on " + dir
	if r.code != 1 || !strings.HasPrefix(r.stderr, refusal) || !strings.Contains(r.stderr, "or pass --force") || r.stdout != "" {
		t.Fatalf("stop-apps with a node running: %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 and %s…", r.code, r.stdout, r.stderr, refusal)
	}
	if a := n.app(t, "hello"); a.Status != reaper.StatusUp {
		t.Fatalf("hello is %s after a refused stop-apps", a.Status)
	}

	r = runCLI(t, context.Background(), "stop-apps", "--config", n.config, "--force")
	stopped := regexp.MustCompile(`^hello: stopped \(pid \d+, SIGTERM, gone after \S+\)\n$`)
	if r.code != 0 || !stopped.MatchString(r.stdout) || !strings.Contains(r.stderr, "warning: a reaper node (pid ") {
		t.Fatalf("stop-apps --force: %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	n.waitStatus(t, "hello", reaper.StatusDown)

	// Once the node is gone, an app it left running is stopped without --force.
	if r := n.cli(t, "wake", "api", "--wait", "--timeout", "30s"); r.code != 0 {
		t.Fatalf("reaper wake: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	n.shutdown()
	r = runCLI(t, context.Background(), "stop-apps", "--config", n.config)
	if r.code != 0 || !regexp.MustCompile(`^api: stopped \(pid \d+, SIGTERM, gone after \S+\)\n$`).MatchString(r.stdout) || r.stderr != "" {
		t.Fatalf("stop-apps with no node: %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, context.Background(), "stop-apps", "--config", n.config)
	if want := "no app started by reaper for " + dir + " is running\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("stop-apps again: %d\nstdout:\n%s\nstderr:\n%s\nwant %q", r.code, r.stdout, r.stderr, want)
	}
}

func TestStopApps_ConfigIsRequired(t *testing.T) {
	r := runCLI(t, context.Background(), "stop-apps")
	if r.code != 2 || !strings.Contains(r.stderr, "--config is required") {
		t.Errorf("stop-apps without --config: %d\n%s", r.code, r.stderr)
	}
}

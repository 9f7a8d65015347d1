package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// A second `reaper serve` on the data directory of a running one refuses to start,
// naming the directory and the pid that holds it, and the first node keeps serving:
// two nodes on one directory would both decide and both write state.json.
func TestServe_SecondNodeOnDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	first := startReaper(t, dir, reaperConfig(app{id: "web", addr: freeport.Addr(t)}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, bins.reaper, "serve", "--config", first.config, "--log-format", "json")
	var stderr bytes.Buffer
	second.Stderr = &stderr
	err := second.Run()
	if ctx.Err() != nil {
		t.Fatalf("the second node still runs after 30 s (it should have refused at once); stderr:\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the second node exited with %v, want a failure; stderr:\n%s", err, stderr.String())
	}
	msg := stderr.String()
	dataDir := filepath.Join(dir, "data")
	for _, want := range []string{"node.data_dir", dataDir, "another reaper node runs on this data directory", "pid " + strconv.Itoa(first.cmd.Process.Pid)} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "reaper started") {
		t.Errorf("the second node started before it refused:\n%s", msg)
	}
	if code, _, _ := getApp(t, first, "web.test"); code != 200 {
		t.Errorf("the first node answers %d after the refusal, want 200", code)
	}
}

// A node SIGKILLed leaves no lock behind: the kernel drops it with the process, so
// a node restarted at once on the same data directory starts and serves.
func TestServe_RestartAfterSIGKILLTakesTheDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := reaperConfig(app{id: "web", addr: freeport.Addr(t)})
	first := startReaper(t, dir, cfg)
	if code, _, _ := getApp(t, first, "web.test"); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	first.kill()                       // SIGKILL: no shutdown, no unlock
	second := startReaper(t, dir, cfg) // fails the test if it exits before "reaper started"
	if code, _, _ := getApp(t, second, "web.test"); code != 200 {
		t.Errorf("after the restart: %d, want 200", code)
	}
}

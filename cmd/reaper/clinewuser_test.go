package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/reaper"
)

// What a new user met on the command line.

// A refused sleep names the command's option, not the API's query parameter.
func TestSleepCmd_RefusalNamesTheForceOption(t *testing.T) {
	admin := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error": "the app is held awake until 2026-12-01T08:59:35Z by alice (backup); release the hold, or ?force=true ends it"}`))
	})
	r := runCLI(t, context.Background(), "sleep", "hello", "--admin", admin)
	if r.code != exitConflict || !strings.Contains(r.stderr, "release the hold, or --force ends it (409 Conflict)") ||
		strings.Contains(r.stderr, "?force=true") {
		t.Errorf("reaper sleep refused: %d\n%s", r.code, r.stderr)
	}
}

// history and app agree on an unknown app: not found, exit 4, as
// docs/operations.md says.
func TestHistoryCmd_UnknownAppExits4LikeApp(t *testing.T) {
	n := startTestNode(t)
	for _, cmd := range []string{"history", "app"} {
		if r := n.cli(t, cmd, "nope"); r.code != exitNotFound || !strings.Contains(r.stderr, `no app "nope" (404 Not Found)`) {
			t.Errorf("reaper %s of an unknown app: %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
	if r := n.cli(t, "history", "hello"); r.code != 0 || !strings.Contains(r.stdout, "WaitingForInit → ") {
		t.Errorf("reaper history of a known app: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A wake that a request asked for is listed once: its change to Up with the
// phases as far as the platform goes, and one wake entry, the first answer's.
func TestHistoryCmd_AWakeIsListedOnce(t *testing.T) {
	n := startTestNode(t)
	n.waitStatus(t, "hello", reaper.StatusDown)
	req, _ := http.NewRequest("GET", "http://"+n.gateway+"/", nil)
	req.Host = "hello.test"
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("held request: %v %v", resp, err)
	}
	resp.Body.Close()
	var r result
	if !testwait.Until(10*time.Second, func() bool {
		r = n.cli(t, "history", "hello")
		return strings.Contains(r.stdout, "first_answer")
	}) {
		t.Fatalf("no first answer in the history:\n%s%s", r.stdout, r.stderr)
	}
	var wakes, ups []string
	for line := range strings.Lines(r.stdout) {
		switch f := strings.Fields(line); {
		case len(f) > 3 && f[3] == "wake":
			wakes = append(wakes, line)
		case strings.Contains(line, "WaitingForUp → Up"):
			ups = append(ups, line)
		}
	}
	if len(wakes) != 1 || len(ups) != 1 || !strings.Contains(ups[0], "platform_up") {
		t.Errorf("the wake is listed %d times, its change to Up %d times (want once each, the change with its phases):\n%s",
			len(wakes), len(ups), r.stdout)
	}
}

// A --config without node.admin_token says that is what lacks, not to give
// --config.
func TestAdminCmds_ConfigWithoutATokenSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reaper.yaml")
	if err := os.WriteFile(path, []byte("node: {admin_listen: 127.0.0.1:9, data_dir: "+filepath.Dir(path)+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noToken := func(string) (string, bool) { return "", false }
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"apps", "--config", path}, noToken, &stdout, &stderr)
	var code exitCode
	if !errors.As(err, &code) || code != 2 || !strings.Contains(stderr.String(), path+" has no node.admin_token") ||
		strings.Contains(stderr.String(), "or --config") {
		t.Errorf("reaper apps --config without a token: %v\n%s", err, stderr.String())
	}
	stderr.Reset()
	err = run(context.Background(), []string{"apps"}, noToken, &stdout, &stderr)
	if !errors.As(err, &code) || code != 2 || !strings.Contains(stderr.String(), "give --token, set REAPER_ADMIN_TOKEN, or --config") {
		t.Errorf("reaper apps without a token: %v\n%s", err, stderr.String())
	}
}

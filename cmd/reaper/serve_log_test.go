package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
)

// What the standard library writes with the log package (net/http's Transport
// does) comes out through the node's handler: with --log-format json, as JSON.
func TestServe_StandardLibraryLogLinesGoThroughTheNodeLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "reaper.yaml")
	yaml := fmt.Sprintf("node:\n  id: n1\n  listen: %s\n  admin_listen: %s\n  data_dir: %s\npaas:\n  driver: process\n",
		freeport.Addr(t), freeport.Addr(t), filepath.Join(dir, "data"))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, flags := log.Writer(), log.Flags()
	var stdout, stderr logtest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", path, "--log-format", "json"},
			func(string) (string, bool) { return "", false }, &stdout, &stderr)
	}()
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() { _ = stop() })
	testwait.For(t, 10*time.Second, "the node to listen", func() bool {
		return stderr.Lines(`"msg":"admin listening"`) == 1
	})

	log.Printf("http: a line from the standard library %d", 42)
	testwait.For(t, 5*time.Second, "the standard library's line in the node's log", func() bool {
		return stderr.Lines("a line from the standard library") == 1
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	found := false
	for line := range strings.Lines(stderr.String()) {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("a line is not JSON: %q", line)
			continue
		}
		if l["msg"] == "http: a line from the standard library 42" && l["level"] == "INFO" {
			found = true
		}
	}
	if !found {
		t.Errorf("no JSON line carries the standard library's message:\n%s", stderr.String())
	}
	// Once serve returns, the log package writes where it wrote before.
	if log.Writer() != out || log.Flags() != flags {
		t.Errorf("the log package's output was not restored: %v, flags %d (want %v, %d)", log.Writer(), log.Flags(), out, flags)
	}
}

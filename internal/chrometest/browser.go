// Package chrometest drives a real headless Chromium from tests, through a minimal Chrome DevTools Protocol
// client: start a browser, open pages, navigate, evaluate JavaScript, wait for a condition, take a
// screenshot. Everything it starts is stopped in t.Cleanup.
//
// Tests that need the browser call Start; when Chromium is not installed they are skipped, unless the
// environment sets REAPER_REQUIRE_CHROMIUM=1 (as CI does), which makes them fail.
package chrometest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Path is the Chromium binary; the REAPER_CHROMIUM environment variable overrides it.
const Path = "/usr/bin/chromium"

// RequireEnv names the environment variable that turns a missing Chromium from a skip into a failure.
const RequireEnv = "REAPER_REQUIRE_CHROMIUM"

// Timeouts of the helper. StartTimeout bounds the browser's start; CallTimeout each DevTools command
// (navigations included); StopTimeout how long, once the browser has exited, its output is still drained
// from helper processes that hold the pipe.
var (
	StartTimeout = 30 * time.Second
	CallTimeout  = 15 * time.Second
	StopTimeout  = 5 * time.Second
)

// stderrTail bounds the browser output kept for error messages.
const stderrTail = 8 << 10

// Browser is a running headless Chromium. Its methods may be used from several goroutines.
type Browser struct {
	conn   *conn
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for
	out    *outputWatcher
}

// Start launches a headless Chromium with a fresh profile and connects to it. It blocks until the browser
// listens (StartTimeout at most) and fails the test if it cannot start. When the binary is missing it
// skips the test, or fails it when REAPER_REQUIRE_CHROMIUM=1. In t.Cleanup the connection is closed, the
// browser's process group killed and waited for, and its profile removed.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := Path
	if p := os.Getenv("REAPER_CHROMIUM"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("chrometest: chromium not found at %s (%v) and %s=1", path, err, RequireEnv)
		}
		t.Skipf("chrometest: chromium not found at %s: install it (apt-get install chromium) or set REAPER_CHROMIUM; set %s=1 to fail instead of skipping", path, RequireEnv)
	}

	profile := t.TempDir() // removed after the cleanup below has stopped the browser
	cmd := exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio",
		"--remote-debugging-port=0", "--user-data-dir="+profile, "about:blank")
	out := &outputWatcher{url: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = out, out
	// Children keep the output pipe open; do not wait for them forever once the browser has exited.
	cmd.WaitDelay = StopTimeout
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("chrometest: start %s: %v", path, err)
	}
	b := &Browser{cmd: cmd, exited: make(chan struct{}), out: out}
	go func() {
		_ = cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(b.stop)

	var wsURL string
	select {
	case wsURL = <-out.url:
	case <-b.exited:
		t.Fatalf("chrometest: chromium exited before listening; output:\n%s", out.tail())
	case <-time.After(StartTimeout):
		t.Fatalf("chrometest: chromium did not listen within %v; output:\n%s", StartTimeout, out.tail())
	}
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatalf("chrometest: connect to %s: %v", wsURL, err)
	}
	ws.SetReadLimit(64 << 20) // screenshots arrive as one large frame
	b.conn = newConn(ws)
	return b
}

// Call sends a browser-level DevTools command and decodes its result into result (unless nil). It blocks
// until the answer or CallTimeout; errors wrap ErrCDP (the browser refused) or ErrClosed.
func (b *Browser) Call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	return b.conn.call(ctx, "", method, params, result)
}

// stop kills the browser's process group and waits for it. A graceful Browser.close takes one to two
// seconds per browser for nothing: the profile is thrown away. Idempotent.
func (b *Browser) stop() {
	if b.conn != nil {
		b.conn.close()
	}
	killProcessGroup(b.cmd)
	<-b.exited
}

// outputWatcher receives the browser's output: it reports the DevTools URL once and keeps a bounded tail
// for error messages.
type outputWatcher struct {
	url chan string // buffered 1, sent once

	mu      sync.Mutex
	partial []byte // current line, bounded
	last    []byte // tail of the output, bounded
	found   bool
}

const listenPrefix = "DevTools listening on "

func (o *outputWatcher) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last = append(o.last, p...)
	if len(o.last) > stderrTail {
		o.last = append([]byte(nil), o.last[len(o.last)-stderrTail:]...)
	}
	if o.found {
		return len(p), nil
	}
	for _, c := range p {
		if c != '\n' {
			if len(o.partial) < 4096 {
				o.partial = append(o.partial, c)
			}
			continue
		}
		line := strings.TrimSpace(string(o.partial))
		o.partial = o.partial[:0]
		if _, u, ok := strings.Cut(line, listenPrefix); ok && strings.HasPrefix(u, "ws://") {
			o.found = true
			o.url <- u
			break
		}
	}
	return len(p), nil
}

func (o *outputWatcher) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(bytes.ToValidUTF8(o.last, nil))
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// waitTimeout bounds every wait of these tests; nothing should take near as long.
const waitTimeout = 10 * time.Second

var listeningRe = regexp.MustCompile(`(?m)^demoapp \S+ pid \d+ listening on (\S+)$`)

// logWatch is an io.Writer that keeps what was written and wakes waiters on each write.
type logWatch struct {
	mu      sync.Mutex
	buf     []byte
	changed chan struct{} // closed and replaced on each write
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// waitFor returns the submatches of re once the log matches it. It fails the test if
// done closes first (the writer has finished) or after waitTimeout.
func (w *logWatch) waitFor(t *testing.T, re *regexp.Regexp, done <-chan struct{}) []string {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		m := re.FindStringSubmatch(string(w.buf))
		changed := w.changed
		w.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-changed:
		case <-done:
			if m := re.FindStringSubmatch(w.String()); m != nil {
				return m
			}
			t.Fatalf("finished before logging %q; log:\n%s", re, w.String())
		case <-deadline.C:
			t.Fatalf("no %q in the log after %s; log:\n%s", re, waitTimeout, w.String())
		}
	}
}

// running is one in-process run.
type running struct {
	cancel context.CancelFunc
	log    *logWatch // stderr
	stdout *logWatch
	done   chan struct{}
	err    error // set before done closes
}

func startRun(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, log: newLogWatch(), stdout: newLogWatch(), done: make(chan struct{})}
	go func() {
		r.err = run(ctx, args, r.stdout, r.log)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// addr waits for the listening line and returns the address in it.
func (r *running) addr(t *testing.T) string {
	t.Helper()
	return r.log.waitFor(t, listeningRe, r.done)[1]
}

// result waits for run to return.
func (r *running) result(t *testing.T) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(waitTimeout):
		t.Fatalf("run still running after %s; log:\n%s", waitTimeout, r.log.String())
		return nil
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, body := do(t, newRequest(t, http.MethodGet, url, nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

func TestRun_ServesThenStopsOnCancel(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--name", "alpha")
	addr := r.addr(t)
	var info rootInfo
	getJSON(t, "http://"+addr+"/", &info)
	if info.Name != "alpha" || info.PID != os.Getpid() {
		t.Errorf("/ = %+v", info)
	}
	r.cancel()
	if err := r.result(t); err != nil || exitCode(err) != 0 {
		t.Fatalf("run = %v", err)
	}
	if !strings.Contains(r.log.String(), "demoapp alpha pid ") || !strings.HasSuffix(r.log.String(), " stopped\n") {
		t.Errorf("log:\n%s", r.log.String())
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the port still accepts after run returned")
	}
}

func TestRun_BootDelayKeepsThePortClosed(t *testing.T) {
	addr := freeport.Addr(t)
	r := startRun(t, "--listen", addr, "--boot-delay", "1h")
	r.log.waitFor(t, regexp.MustCompile(`booting, listening in 1h0m0s`), r.done)
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the port accepts during the boot delay")
	}
	r.cancel()
	if err := r.result(t); err != nil {
		t.Fatalf("run = %v", err)
	}
	if strings.Contains(r.log.String(), "listening on") {
		t.Errorf("listened although stopped while booting:\n%s", r.log.String())
	}
}

func TestRun_BootDelayThenListens(t *testing.T) {
	const delay = 50 * time.Millisecond
	addr := freeport.Addr(t)
	start := time.Now()
	r := startRun(t, "--listen", addr, "--boot-delay", "0.05") // bare seconds
	var err error
	if !testwait.Until(waitTimeout, func() bool {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		select {
		case <-r.done:
			t.Fatalf("run returned %v; log:\n%s", r.err, r.log.String())
		default:
		}
		return false
	}) {
		t.Fatalf("not listening after %s: %v; log:\n%s", waitTimeout, err, r.log.String())
	}
	accepted := time.Now()
	if elapsed := accepted.Sub(start); elapsed < delay {
		t.Errorf("accepting after %v, before the %v boot delay", elapsed, delay)
	}
	if got := r.addr(t); got != addr {
		t.Errorf("logged %s, want %s", got, addr)
	}

	// listening_at is when the port opened: after the boot delay, before the first
	// connection was accepted.
	var info rootInfo
	getJSON(t, "http://"+addr+"/", &info)
	started, err1 := time.Parse(time.RFC3339Nano, info.StartedAt)
	listening, err2 := time.Parse(time.RFC3339Nano, info.ListeningAt)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("/ = %+v: %v", info, err)
	}
	if d := listening.Sub(started); d < delay {
		t.Errorf("listening_at %s is %v after started_at %s, want at least the %v boot delay", info.ListeningAt, d, info.StartedAt, delay)
	}
	if listening.Before(start.Add(delay).Round(0)) || listening.After(accepted.Round(0)) {
		t.Errorf("listening_at %s not between %s (start + delay) and %s (first connection)",
			info.ListeningAt, start.Add(delay).UTC().Format(time.RFC3339Nano), accepted.UTC().Format(time.RFC3339Nano))
	}
}

func TestRun_FailAfterDuringBootExits3(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--boot-delay", "1h", "--fail-after", "20ms")
	err := r.result(t)
	if !errors.Is(err, errFailAfter) || exitCode(err) != 3 {
		t.Errorf("run = %v (exit %d), want errFailAfter (exit 3)", err, exitCode(err))
	}
	if !strings.Contains(r.log.String(), "failing while booting") {
		t.Errorf("log:\n%s", r.log.String())
	}
}

// TestRun_FailAfterWhileServingDropsRequests checks that the crash gives no grace to a
// request in flight.
func TestRun_FailAfterWhileServingDropsRequests(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--fail-after", "1s")
	addr := r.addr(t)
	resp, err := http.Get("http://" + addr + "/slow?d=1h")
	if err == nil {
		resp.Body.Close()
		t.Errorf("a 1h /slow answered %d across the crash", resp.StatusCode)
	}
	if err := r.result(t); !errors.Is(err, errFailAfter) || exitCode(err) != 3 {
		t.Errorf("run = %v, want errFailAfter (exit 3)", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the port still accepts after the crash")
	}
}

// openStream starts /stream and returns the body after its first line has arrived,
// which proves the handler is in flight.
func openStream(t *testing.T, addr, query string) (*bufio.Reader, io.Closer) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/stream?" + query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "line 1 of ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	return br, resp.Body
}

func TestRun_ShutdownLetsInFlightRequestsFinish(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0")
	br, _ := openStream(t, r.addr(t), "n=2&interval=200ms")
	r.cancel()
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasPrefix(string(rest), "line 2 of 2 at ") {
		t.Errorf("rest of the stream during shutdown: %q, %v", rest, err)
	}
	if err := r.result(t); err != nil {
		t.Errorf("run = %v", err)
	}
}

// TestRun_ShutdownWaitsUntilTheRequestEnds holds an upload open across the start of
// the shutdown: the client decides when it ends, so no timing is involved.
func TestRun_ShutdownWaitsUntilTheRequestEnds(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--shutdown-timeout", "1h")
	addr := r.addr(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	reading := make(chan struct{})
	var once sync.Once
	// The server sends 100 Continue when the handler first reads the body: then the
	// request is in flight.
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		Got100Continue: func() { once.Do(func() { close(reading) }) },
	})
	req := newRequest(t, http.MethodPost, "http://"+addr+"/upload", pr).WithContext(ctx)
	req.Header.Set("Expect", "100-continue")
	type result struct {
		code int
		body string
		err  error
	}
	resc := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			resc <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		resc <- result{resp.StatusCode, string(b), err}
	}()
	select {
	case <-reading:
	case res := <-resc:
		t.Fatalf("upload ended before its body was sent: %d %q, %v", res.code, res.body, res.err)
	case <-time.After(waitTimeout):
		t.Fatal("no 100 Continue")
	}

	r.cancel()
	r.log.waitFor(t, regexp.MustCompile(`shutting down`), r.done)
	select {
	case <-r.done:
		t.Fatalf("run returned %v while a request was in flight", r.err)
	default:
	}
	if _, err := pw.Write([]byte("hello")); err != nil {
		t.Fatalf("writing the body during shutdown: %v", err)
	}
	pw.Close()
	res := <-resc
	if res.err != nil || res.code != http.StatusOK || !strings.Contains(res.body, `"bytes":5`) {
		t.Errorf("upload across the shutdown = %d %q, %v; want 200 with 5 bytes", res.code, res.body, res.err)
	}
	if err := r.result(t); err != nil {
		t.Errorf("run = %v", err)
	}
}

func TestRun_ShutdownTimeoutCutsLongRequests(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--shutdown-timeout", "50ms")
	br, _ := openStream(t, r.addr(t), "n=2&interval=1h")
	r.cancel()
	if err := r.result(t); err != nil {
		t.Errorf("run = %v", err)
	}
	if rest, err := io.ReadAll(br); err == nil {
		t.Errorf("the cut stream ended cleanly with %q", rest)
	}
	if !strings.Contains(r.log.String(), "closing them") {
		t.Errorf("log:\n%s", r.log.String())
	}
}

func TestRun_ShutdownClosesWebSockets(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c := dialWS(t, ctx, "http://"+r.addr(t))
	if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	r.cancel()
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("read during shutdown = %v, want going away", err)
	}
	if err := r.result(t); err != nil {
		t.Errorf("run = %v", err)
	}
}

func TestRun_ListenErrorExits1(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := startRun(t, "--listen", ln.Addr().String())
	if err := r.result(t); err == nil || exitCode(err) != 1 {
		t.Errorf("run on a busy port = %v (exit %d), want an error (exit 1)", err, exitCode(err))
	}
}

func TestRun_HelpAndBadFlags(t *testing.T) {
	r := startRun(t, "--help")
	if err := r.result(t); err != nil {
		t.Errorf("--help: %v", err)
	}
	if !strings.Contains(r.stdout.String(), "Usage: demoapp") {
		t.Errorf("--help stdout:\n%s", r.stdout.String())
	}
	r = startRun(t, "--memory", "lots")
	if err := r.result(t); exitCode(err) != 2 {
		t.Errorf("--memory lots: %v (exit %d), want exit 2", err, exitCode(err))
	}
}

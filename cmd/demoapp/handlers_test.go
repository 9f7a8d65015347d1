package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startApp serves a fresh app on a loopback port and returns the server.
func startApp(t *testing.T, latency time.Duration) (*httptest.Server, *app) {
	t.Helper()
	now := time.Now()
	a := newApp("t", os.Getpid(), now, now, latency)
	srv := httptest.NewServer(a.routes())
	t.Cleanup(srv.Close)
	return srv, a
}

// do sends a request and returns the status and the whole body.
func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func newRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// closeWithin closes srv, failing the test if a handler keeps it from closing (a
// handler that did not notice its client leaving).
func closeWithin(t *testing.T, srv *httptest.Server, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		srv.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("server still busy %s after the client went away", d)
	}
}

func TestRoot_JSONForAnyMethodAndPath(t *testing.T) {
	srv, a := startApp(t, 0)
	resp, body := do(t, newRequest(t, http.MethodPatch, srv.URL+"/some/path?x=1", nil))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got rootInfo
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	started, err := time.Parse(time.RFC3339Nano, got.StartedAt)
	if err != nil || !started.Equal(a.started) {
		t.Errorf("started_at %q (%v), want %v", got.StartedAt, err, a.started)
	}
	// startApp gives the same instant for the start and the port opening.
	listening, err := time.Parse(time.RFC3339Nano, got.ListeningAt)
	if err != nil || !listening.Equal(a.started) {
		t.Errorf("listening_at %q (%v), want %v", got.ListeningAt, err, a.started)
	}
	want := rootInfo{Name: "t", PID: os.Getpid(), StartedAt: got.StartedAt, ListeningAt: got.ListeningAt, UptimeMS: got.UptimeMS,
		Method: "PATCH", Host: srv.Listener.Addr().String(), Path: "/some/path"}
	if got != want || got.UptimeMS < 0 {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestRoot_TextWhenAcceptPrefersIt(t *testing.T) {
	srv, _ := startApp(t, 0)
	req := newRequest(t, http.MethodGet, srv.URL+"/", nil)
	req.Header.Set("Accept", "text/plain")
	resp, body := do(t, req)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("type %q", resp.Header.Get("Content-Type"))
	}
	for _, s := range []string{"name: t\n", "pid: " + strconv.Itoa(os.Getpid()) + "\n", "method: GET\n", "path: /\n", "uptime_ms: ", "started_at: ", "listening_at: "} {
		if !strings.Contains(string(body), s) {
			t.Errorf("text answer lacks %q:\n%s", s, body)
		}
	}
}

func TestPrefersText(t *testing.T) {
	tests := []struct {
		accept string
		want   bool
	}{
		{"", false},
		{"*/*", false},
		{"application/json", false},
		{"text/plain", true},
		{"TEXT/PLAIN; charset=utf-8", true},
		{"text/*", true},
		{"text/plain;q=0.5, application/json", false},
		{"text/plain, application/json;q=0.9", true},
		{"application/json;q=0.1, text/plain;q=0.2", true},
		{"text/plain;q=0.5, */*;q=0.9", false}, // json through */* at 0.9 beats text at 0.5
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"text/plain;q=0", false},
	}
	for _, tt := range tests {
		if got := prefersText(tt.accept); got != tt.want {
			t.Errorf("prefersText(%q) = %v, want %v", tt.accept, got, tt.want)
		}
	}
}

func TestRoot_LatencyDelaysTheAnswer(t *testing.T) {
	const latency = 30 * time.Millisecond
	srv, _ := startApp(t, latency)
	start := time.Now()
	resp, _ := do(t, newRequest(t, http.MethodGet, srv.URL+"/", nil))
	if elapsed := time.Since(start); resp.StatusCode != http.StatusOK || elapsed < latency {
		t.Errorf("status %d after %v, want 200 after at least %v", resp.StatusCode, elapsed, latency)
	}
	// /healthz is not slowed down.
	if resp, body := do(t, newRequest(t, http.MethodGet, srv.URL+"/healthz", nil)); resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("/healthz = %d %q", resp.StatusCode, body)
	}
}

func TestEcho_ReportsTheRequestAsReceived(t *testing.T) {
	srv, _ := startApp(t, 0)
	req := newRequest(t, http.MethodPost, srv.URL+"/echo?a=1&b=two%20words", strings.NewReader("hello"))
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Set("User-Agent", "demoapp-test")
	var local string
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(ci httptrace.GotConnInfo) { local = ci.Conn.LocalAddr().String() },
	}))
	resp, body := do(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got echoInfo
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	sum := sha256.Sum256([]byte("hello"))
	if got.Method != "POST" || got.Path != "/echo" || got.RawQuery != "a=1&b=two%20words" ||
		got.Host != srv.Listener.Addr().String() || got.RemoteAddr != local || got.Proto != "HTTP/1.1" ||
		got.BodyBytes != 5 || got.BodySHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("echo = %+v (client at %s)", got, local)
	}
	if h := got.Headers["X-Multi"]; len(h) != 2 || h[0] != "one" || h[1] != "two" {
		t.Errorf("X-Multi = %q, want [one two]", h)
	}
	if h := got.Headers["User-Agent"]; len(h) != 1 || h[0] != "demoapp-test" {
		t.Errorf("User-Agent = %q", h)
	}
}

// TestUpload_StreamsA64MiBBody sends 64 MiB of random bytes with chunked encoding and
// checks the answer's size and hash. It runs alone (not parallel), so the process's
// allocation count shows that neither side held the body.
func TestUpload_StreamsA64MiBBody(t *testing.T) {
	const size = 64 << 20
	srv, _ := startApp(t, 0)
	h := sha256.New()
	src := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{1}), size), h)
	req := newRequest(t, http.MethodPost, srv.URL+"/upload", io.NopCloser(src)) // unknown length: chunked

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, body := do(t, req)
	runtime.ReadMemStats(&after)

	var got struct {
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v in %s", resp.StatusCode, err, body)
	}
	if got.Bytes != size || got.SHA256 != hex.EncodeToString(h.Sum(nil)) {
		t.Errorf("upload = %+v, want %d bytes with sha256 %x", got, size, h.Sum(nil))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("uploading %d bytes allocated %d bytes: the body was held somewhere", size, alloc)
	}
}

func TestDownload_StreamsTheAskedBytes(t *testing.T) {
	srv, _ := startApp(t, 0)
	const n = 3*downloadChunk + 7 // not a whole number of chunks
	resp, err := http.DefaultClient.Do(newRequest(t, http.MethodGet, srv.URL+"/download?bytes="+strconv.Itoa(n), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != n {
		t.Fatalf("status %d, Content-Length %d, want 200 and %d", resp.StatusCode, resp.ContentLength, n)
	}
	var count int
	r := bufio.NewReader(resp.Body)
	for {
		b, err := r.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := downloadPattern[count%len(downloadPattern)]; b != want {
			t.Fatalf("byte %d = %q, want %q", count, b, want)
		}
		count++
	}
	if count != n {
		t.Errorf("read %d bytes, want %d", count, n)
	}
}

func TestDownload_SizesWithUnitsAndBadInput(t *testing.T) {
	srv, _ := startApp(t, 0)
	resp, body := do(t, newRequest(t, http.MethodGet, srv.URL+"/download?bytes=1MiB", nil))
	if resp.StatusCode != http.StatusOK || len(body) != 1<<20 {
		t.Errorf("1MiB: status %d, %d bytes", resp.StatusCode, len(body))
	}
	for _, q := range []string{"", "?bytes=", "?bytes=-1", "?bytes=lots"} {
		if resp, _ := do(t, newRequest(t, http.MethodGet, srv.URL+"/download"+q, nil)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("/download%s: status %d, want 400", q, resp.StatusCode)
		}
	}
}

func TestSlow_AnswersAfterTheWait(t *testing.T) {
	srv, _ := startApp(t, 0)
	const d = 20 * time.Millisecond
	start := time.Now()
	resp, body := do(t, newRequest(t, http.MethodGet, srv.URL+"/slow?d=20ms", nil))
	if elapsed := time.Since(start); resp.StatusCode != http.StatusOK || elapsed < d {
		t.Errorf("status %d (%s) after %v, want 200 after at least %v", resp.StatusCode, body, elapsed, d)
	}
	if resp, _ := do(t, newRequest(t, http.MethodGet, srv.URL+"/slow?d=never", nil)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad d: status %d, want 400", resp.StatusCode)
	}
}

func TestSlow_GivesUpWhenTheClientLeaves(t *testing.T) {
	a := newApp("t", os.Getpid(), time.Now(), time.Now(), 0)
	srv := httptest.NewUnstartedServer(a.routes())
	active := make(chan struct{}, 1)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateActive {
			select {
			case active <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow?d=1h", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-active // the server is reading the request: the handler will run
	cancel()
	if err := <-errc; err == nil {
		t.Error("a 1h /slow answered before the client left")
	}
	closeWithin(t, srv, 10*time.Second)
}

func TestStream_WritesNLinesOnePerInterval(t *testing.T) {
	srv, _ := startApp(t, 0)
	start := time.Now()
	resp, body := do(t, newRequest(t, http.MethodGet, srv.URL+"/stream?n=3&interval=10ms", nil))
	elapsed := time.Since(start)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if resp.StatusCode != http.StatusOK || len(lines) != 3 {
		t.Fatalf("status %d, lines %q", resp.StatusCode, lines)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "line "+strconv.Itoa(i+1)+" of 3 at ") {
			t.Errorf("line %d = %q", i, l)
		}
	}
	if elapsed < 20*time.Millisecond {
		t.Errorf("3 lines 10ms apart took %v, want at least 20ms", elapsed)
	}
	for _, q := range []string{"n=-1", "n=x", "n=1000001", "interval=x"} {
		if resp, _ := do(t, newRequest(t, http.MethodGet, srv.URL+"/stream?"+q, nil)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("/stream?%s: status %d, want 400", q, resp.StatusCode)
		}
	}
}

// TestStream_FlushesEachLine reads the first line of a stream whose second line is an
// hour away: it can only arrive if the handler flushed it.
func TestStream_FlushesEachLine(t *testing.T) {
	a := newApp("t", os.Getpid(), time.Now(), time.Now(), 0)
	srv := httptest.NewServer(a.routes())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stream?n=2&interval=1h", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("type %q", resp.Header.Get("Content-Type"))
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: line 1 of 2 at ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	closeWithin(t, srv, 10*time.Second)
}

func TestStatus_AnswersTheCode(t *testing.T) {
	srv, _ := startApp(t, 0)
	tests := []struct {
		path string
		code int
		body string
	}{
		{"/status/200", 200, "200 OK\n"},
		{"/status/418", 418, "418 I'm a teapot\n"},
		{"/status/503", 503, "503 Service Unavailable\n"},
		{"/status/204", 204, ""},
		{"/status/199", 400, ""},
		{"/status/600", 400, ""},
		{"/status/abc", 400, ""},
	}
	for _, tt := range tests {
		resp, body := do(t, newRequest(t, http.MethodGet, srv.URL+tt.path, nil))
		if resp.StatusCode != tt.code || (tt.code != 400 && string(body) != tt.body) {
			t.Errorf("%s = %d %q, want %d %q", tt.path, resp.StatusCode, body, tt.code, tt.body)
		}
	}
}

// BenchmarkRoot measures the handler the gateway benchmark hammers, without the network.
func BenchmarkRoot(b *testing.B) {
	h := newApp("bench", os.Getpid(), time.Now(), time.Now(), 0).routes()
	req := httptest.NewRequest(http.MethodGet, "http://hello.localhost/", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

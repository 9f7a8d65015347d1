package plugin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProxy_StripPathAndRoot(t *testing.T) {
	b := echoBackend(t)
	r := mustRouter(t, `
routes:
  - {id: strip, frontend: {domains: [strip.test/api]}, backend: {targets: ["$B"]}}
  - {id: keep, frontend: {domains: [keep.test/api], strip_path: false}, backend: {targets: ["$B"]}}
  - {id: root-strip, frontend: {domains: [rs.test/api]}, backend: {targets: ["$B"], root: /v2/}}
  - {id: root-keep, frontend: {domains: [rk.test/api], strip_path: false}, backend: {targets: ["$B"], root: /v2}}
  - {id: root-only, frontend: {domains: [ro.test]}, backend: {targets: ["$B"], root: /v2}}
  - {id: target-path, frontend: {domains: [tp.test/api]}, backend: {targets: ["$B/base/"], root: /v2}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	cases := []struct{ host, path, want string }{
		{"strip.test", "/api/users?x=1&y=%20", "/users?x=1&y=%20"},
		{"strip.test", "/api", "/"},
		{"strip.test", "/api/", "/"},
		{"strip.test", "/api/a%2Fb", "/a%2Fb"},
		{"strip.test", "/api/../api/x", "/x"},
		{"keep.test", "/api/users", "/api/users"},
		{"keep.test", "/api", "/api"},
		{"rs.test", "/api/users", "/v2/users"},
		{"rs.test", "/api", "/v2"},
		{"rs.test", "/api/", "/v2/"},
		{"rk.test", "/api/users?q", "/v2/api/users?q"},
		{"ro.test", "/x", "/v2/x"},
		{"ro.test", "/", "/v2/"},
		{"tp.test", "/api/users", "/base/v2/users"},
		{"tp.test", "/api", "/base/v2"},
	}
	backendHost := strings.TrimPrefix(b.URL, "http://")
	for _, tc := range cases {
		res, body := gw.do(t, "GET", tc.host, tc.path, nil, nil)
		if res.StatusCode != 200 {
			t.Fatalf("%s%s: status %d: %s", tc.host, tc.path, res.StatusCode, body)
		}
		if uri, _ := field(body, "uri"); uri != tc.want {
			t.Errorf("%s%s reached the backend as %q, want %q", tc.host, tc.path, uri, tc.want)
		}
		if host, _ := field(body, "host"); host != backendHost {
			t.Errorf("Host sent to the backend = %q, want the target's %q", host, backendHost)
		}
	}
}

func TestProxy_XForwardedHeaders(t *testing.T) {
	b := echoBackend(t)
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	spoofed := http.Header{
		"X-Forwarded-For":   {"203.0.113.9, 10.0.0.1"},
		"X-Forwarded-Proto": {"https"},
		"X-Forwarded-Host":  {"public.example"},
		"Forwarded":         {"for=203.0.113.9"},
		"X-Real-Ip":         {"203.0.113.9"},
	}

	t.Run("untrusted peer: inbound values dropped", func(t *testing.T) {
		gw := newTestGateway(t, r)
		_, body := gw.do(t, "GET", "a.test:8080", "/", spoofed, nil)
		expect(t, body, "X-Forwarded-For", "127.0.0.1")
		expect(t, body, "X-Forwarded-Proto", "http")
		expect(t, body, "X-Forwarded-Host", "a.test:8080")
		for _, k := range []string{"Forwarded", "X-Real-Ip"} {
			if v, ok := field(body, k); ok {
				t.Errorf("the client's %s reached the backend: %q", k, v)
			}
		}
	})
	t.Run("trusted peer: chain kept", func(t *testing.T) {
		gw := newTestGateway(t, r, "127.0.0.0/8")
		res, body := gw.do(t, "GET", "a.test", "/", spoofed, nil)
		expect(t, body, "X-Forwarded-For", "203.0.113.9, 10.0.0.1, 127.0.0.1")
		expect(t, body, "X-Forwarded-Proto", "https")
		expect(t, body, "X-Forwarded-Host", "public.example")
		expect(t, body, "X-Real-Ip", "203.0.113.9")
		if v, ok := field(body, "Forwarded"); ok {
			t.Errorf("Forwarded reached the backend: %q (reaper sends X-Forwarded-* only)", v)
		}
		// The client address walks the chain from the right past trusted
		// proxies: 10.0.0.1 is not trusted here, so it is the client.
		line := gw.accessLine(t, res.Header.Get("X-Request-Id"))
		if line["client"] != "10.0.0.1" {
			t.Errorf("client = %v, want 10.0.0.1", line["client"])
		}
	})
	t.Run("trusted peer without inbound headers", func(t *testing.T) {
		gw := newTestGateway(t, r, "127.0.0.1")
		_, body := gw.do(t, "GET", "a.test", "/", nil, nil)
		expect(t, body, "X-Forwarded-For", "127.0.0.1")
		expect(t, body, "X-Forwarded-Proto", "http")
	})
	t.Run("trusted peer with a bogus proto", func(t *testing.T) {
		gw := newTestGateway(t, r, "127.0.0.1")
		_, body := gw.do(t, "GET", "a.test", "/", http.Header{"X-Forwarded-Proto": {"gopher"}}, nil)
		expect(t, body, "X-Forwarded-Proto", "http")
	})
}

func expect(t *testing.T, body, key, want string) {
	t.Helper()
	got, ok := field(body, key)
	if !ok || got != want {
		t.Errorf("backend saw %s = %q (present %v), want %q", key, got, ok, want)
	}
}

func TestProxy_HopByHopHeadersRemoved(t *testing.T) {
	b := echoBackend(t)
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	// The client names X-Forwarded-For and X-Request-Id in Connection: with
	// Rewrite, the proxy removes the client's values before it adds its own, so
	// the headers it adds still arrive.
	res, body := gw.do(t, "GET", "a.test", "/", http.Header{
		"Connection":       {"X-Secret, X-Forwarded-For, X-Request-Id"},
		"X-Secret":         {"s3cret"},
		"Keep-Alive":       {"timeout=5"},
		"Proxy-Connection": {"keep-alive"},
		"Te":               {"gzip"},
		"X-Forwarded-For":  {"198.51.100.1"},
	}, nil)
	for _, k := range []string{"X-Secret", "Keep-Alive", "Proxy-Connection", "Te"} {
		if v, ok := field(body, k); ok {
			t.Errorf("hop-by-hop %s reached the backend: %q", k, v)
		}
	}
	expect(t, body, "X-Forwarded-For", "127.0.0.1")
	expect(t, body, "X-Request-Id", res.Header.Get("X-Request-Id"))

	// TE: trailers is the one value that goes through.
	_, body = gw.do(t, "GET", "a.test", "/", http.Header{"Te": {"trailers"}}, nil)
	expect(t, body, "Te", "trailers")
}

func TestProxy_RefusesH2CUpgrade(t *testing.T) {
	b := echoBackend(t)
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	conn, err := net.Dial("tcp", gw.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /h2c HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("status %d, want the backend's plain 200", res.StatusCode)
	}
	for _, k := range []string{"Upgrade", "Http2-Settings"} {
		if v, ok := field(string(body), k); ok {
			t.Errorf("backend saw %s: %q", k, v)
		}
	}
	if res.Header.Get("Upgrade") != "" {
		t.Errorf("client got an Upgrade header: %q", res.Header.Get("Upgrade"))
	}
}

func TestProxy_BackendUnreachableIs502(t *testing.T) {
	addr, _ := reservedPort(t) // nothing listens there: connection refused
	logs := &logSink{}
	r := buildRouter(t, `
routes:
  - {id: down, frontend: {domains: [down.test]}, backend: {targets: ["http://$A"]}}
`, map[string]string{"A": addr}, BuildOptions{Logger: slog.New(logs)})
	gw := newTestGateway(t, r)

	res, body := gw.do(t, "GET", "down.test", "/", nil, nil)
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != 502 || body != `{"error":"the backend could not be reached","request_id":"`+id+`"}`+"\n" {
		t.Errorf("got %d %q", res.StatusCode, body)
	}
	// The failure is logged with the request id and route, even on a route
	// without plugins.
	if recs := logs.find("backend failed"); len(recs) != 1 || recs[0]["request_id"] != id || recs[0]["route"] != "down" ||
		recs[0]["upstream"] != "http://"+addr || recs[0]["status"] != int64(502) {
		t.Errorf("log records %v", recs)
	}
	line := gw.accessLine(t, id)
	if line["status"] != int64(502) || line["upstream"] != "http://"+addr {
		t.Errorf("access line %v", line)
	}

	res, body = gw.do(t, "GET", "down.test", "/", http.Header{"Accept": {"text/html,*/*;q=0.8"}}, nil)
	if res.StatusCode != 502 || !strings.Contains(body, "the backend could not be reached") ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("browser got %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
}

func TestProxy_SlowBackendIs504(t *testing.T) {
	release := make(chan struct{})
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer b.Close()
	defer close(release)
	r := mustRouter(t, `
routes:
  - {id: slow, frontend: {domains: [slow.test]}, backend: {targets: ["$B"], timeouts: {response_header: 50ms}}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	res, body := gw.do(t, "GET", "slow.test", "/", nil, nil)
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != 504 || body != `{"error":"the backend did not answer in time","request_id":"`+id+`"}`+"\n" {
		t.Errorf("got %d %q", res.StatusCode, body)
	}
}

func TestClassifyProxyError(t *testing.T) {
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutError{}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}
	cases := []struct {
		err    error
		status int
		msg    string
		dial   bool
	}{
		{refused, 502, msgUnreachable, true},
		{dns, 502, msgUnreachable, true},
		{fmt.Errorf("wrapped: %w", refused), 502, msgUnreachable, true},
		{dialTimeout, 504, msgTimeout, true},
		{context.DeadlineExceeded, 504, msgTimeout, false},
		{&timeoutError{}, 504, msgTimeout, false},
		{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset")}, 502, msgBadResponse, false},
		{io.ErrUnexpectedEOF, 502, msgBadResponse, false},
	}
	for _, tc := range cases {
		status, msg := classifyProxyError(tc.err)
		if status != tc.status || msg != tc.msg || isDialFailure(tc.err) != tc.dial {
			t.Errorf("%v: got %d %q dial=%v", tc.err, status, msg, isDialFailure(tc.err))
		}
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

func TestProxy_ClientGoneIsLogged499(t *testing.T) {
	arrived := make(chan struct{})
	gone := make(chan struct{})
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // the gateway cancels the upstream request
		close(gone)
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", gw.srv.URL+"/", nil)
	req.Host = "a.test"
	req.Header.Set("X-Request-Id", "client-gone-1")
	errc := make(chan error, 1)
	go func() {
		res, err := gw.srv.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the client request should have failed")
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	if line := gw.accessLine(t, "client-gone-1"); line["status"] != int64(499) {
		t.Errorf("status logged %v, want 499", line["status"])
	}
}

func TestProxy_BackendFailingMidBodyAbortsTheClient(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("only part of it"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the backend drops the connection
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	req, _ := http.NewRequest("GET", gw.srv.URL+"/", nil)
	req.Host = "a.test"
	// The connection to the client is aborted: depending on what was flushed,
	// the client fails on the headers or on the body, never with a clean end.
	res, err := gw.srv.Client().Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	if _, err := io.ReadAll(res.Body); err == nil {
		t.Error("the client read a complete body from a backend that failed mid-body")
	}
}

// TestProxy_ForwardsInformationalResponses: a 103 from the backend reaches the
// client, and the final response is still the one recorded, with the request id.
func TestProxy_ForwardsInformationalResponses(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, "final")
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	var early []int
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		early = append(early, code)
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", gw.srv.URL+"/", nil)
	req.Host = "a.test"
	req.Header.Set("X-Request-Id", "hints-1")
	res, err := gw.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if len(early) != 1 || early[0] != 103 || res.StatusCode != 200 || string(body) != "final" ||
		res.Header.Get("X-Request-Id") == "" {
		t.Errorf("1xx %v, final %d %q %v", early, res.StatusCode, body, res.Header)
	}
	if line := gw.accessLine(t, "hints-1"); line["status"] != int64(200) || line["bytes"] != int64(5) || line["request_id"] != res.Header.Get("X-Request-Id") {
		t.Errorf("access line %v", line)
	}
}

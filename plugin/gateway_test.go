package plugin

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestGateway_NoRouteAnswers404(t *testing.T) {
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["http://127.0.0.1:1"]}}
`, nil, nil)
	gw := newTestGateway(t, r)

	res, body := gw.do(t, "GET", "nope.test", "/x?token=secret", nil, nil)
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != 404 || body != `{"error":"no route for this host and path","request_id":"`+id+`"}`+"\n" {
		t.Errorf("JSON 404: %d %q", res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	line := gw.accessLine(t, id)
	if line["status"] != int64(404) || line["route"] != "" || line["upstream"] != "gateway" || line["path"] != "/x" {
		t.Errorf("access line %v", line)
	}

	// A browser gets a page; everything in it is escaped (the id of a trusted
	// proxy is the request's, and shown).
	gw = newTestGateway(t, r, "127.0.0.1/32")
	res, body = gw.do(t, "GET", "nope.test", "/", http.Header{
		"Accept":       {"text/html,application/xhtml+xml,*/*;q=0.8"},
		"X-Request-Id": {"<b>id</b>"},
	}, nil)
	if res.StatusCode != 404 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("HTML 404: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(body, "no route for this host and path") || !strings.Contains(body, "&lt;b&gt;id&lt;/b&gt;") ||
		strings.Contains(body, "<b>id</b>") {
		t.Errorf("page %q", body)
	}
	if res.Header.Get("X-Request-Id") != "<b>id</b>" {
		t.Errorf("X-Request-Id %q", res.Header.Get("X-Request-Id"))
	}

	// HEAD gets the status without a body.
	res, body = gw.do(t, "HEAD", "nope.test", "/", nil, nil)
	if res.StatusCode != 404 || body != "" {
		t.Errorf("HEAD: %d %q", res.StatusCode, body)
	}
}

func TestGateway_WithoutRouterAnswers404(t *testing.T) {
	g := NewGateway(GatewayOptions{})
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest("GET", "http://a.test/", nil))
	if w.Code != 404 || w.Header().Get("X-Request-Id") == "" {
		t.Errorf("got %d, id %q", w.Code, w.Header().Get("X-Request-Id"))
	}
}

func TestGateway_RequestID(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "backend-made-this-up")
		fmt.Fprint(w, r.Header.Get("X-Request-Id"))
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)

	viaProxy := newTestGateway(t, r, "127.0.0.1/32") // the test's client is a trusted proxy

	// sane: a token the request may be known by (the client's id in the access
	// log; the request's id when a trusted proxy sent it).
	cases := []struct {
		name string
		sent []string
		sane bool
	}{
		{"sane id", []string{"abc-123_~!"}, true},
		{"128 chars", []string{strings.Repeat("a", 128)}, true},
		{"none", nil, false},
		{"empty", []string{""}, false},
		{"too long", []string{strings.Repeat("a", 129)}, false},
		{"space", []string{"a b"}, false},
		{"tab", []string{"a\tb"}, false},
		{"non-ASCII", []string{"é"}, false},
		{"twice", []string{"a", "b"}, false},
	}
	for _, tc := range cases {
		for _, trusted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/trusted=%v", tc.name, trusted), func(t *testing.T) {
				g := map[bool]*testGateway{false: gw, true: viaProxy}[trusted]
				h := http.Header{}
				if tc.sent != nil {
					h["X-Request-Id"] = tc.sent
				}
				res, body := g.do(t, "GET", "a.test", "/", h, nil)
				got := res.Header.Values("X-Request-Id")
				if len(got) != 1 || got[0] != body {
					t.Fatalf("client got %q, backend got %q: want one id, the same", got, body)
				}
				line := g.accessLine(t, got[0])
				if trusted && tc.sane {
					if got[0] != tc.sent[0] || line["client_request_id"] != nil {
						t.Errorf("id %q (client_request_id %v), want the trusted proxy's %q", got[0], line["client_request_id"], tc.sent[0])
					}
					return
				}
				if u, err := uuid.Parse(got[0]); err != nil || u.Version() != 7 {
					t.Errorf("id %q is not a UUIDv7 of the gateway's", got[0])
				}
				switch {
				case tc.sane && line["client_request_id"] != tc.sent[0]:
					t.Errorf("access line's client_request_id %v, want the client's %q", line["client_request_id"], tc.sent[0])
				case !tc.sane && line["client_request_id"] != nil:
					t.Errorf("access line's client_request_id %v for an id that is not a sane token", line["client_request_id"])
				}
			})
		}
	}
}

func TestGateway_AccessLine(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world")
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	res, _ := gw.do(t, "POST", "a.test:8080", "/p/x?api_key=secret", http.Header{
		"Authorization": {"Bearer top-secret"},
		"X-Request-Id":  {"log-1"},
	}, strings.NewReader("body"))
	if res.StatusCode != 200 {
		t.Fatal(res.Status)
	}
	line := gw.accessLine(t, "log-1")
	want := map[string]any{
		"msg": "access", "level": "INFO", "node": "n1", "request_id": res.Header.Get("X-Request-Id"), "client_request_id": "log-1",
		"route": "a", "method": "POST", "host": "a.test:8080", "path": "/p/x", "status": int64(200), "bytes": int64(12),
		"upstream": b.URL, "client": "127.0.0.1",
	}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, line[k], line[k], v)
		}
	}
	if d, ok := line["duration"].(time.Duration); !ok || d <= 0 {
		t.Errorf("duration = %v", line["duration"])
	}
	if len(line) != len(want)+1 {
		t.Errorf("unexpected keys in %v", line)
	}
	for _, rec := range gw.logs.find("access") {
		if s := fmt.Sprint(rec); strings.Contains(s, "secret") {
			t.Errorf("a secret reached the log: %s", s)
		}
	}
}

// TestGateway_SwapKeepsRequestsInFlight: a request held by the old router's
// backend finishes there while new requests use the new router.
func TestGateway_SwapKeepsRequestsInFlight(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	oldB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "old")
	}))
	defer oldB.Close()
	newB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "new")
	}))
	defer newB.Close()
	const src = `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$B"]}}
`
	oldR := mustRouter(t, src, map[string]string{"B": oldB.URL}, nil)
	newR := mustRouter(t, src, map[string]string{"B": newB.URL}, nil)
	gw := newTestGateway(t, oldR)

	held := make(chan string, 1)
	go func() {
		_, body := gw.do(t, "GET", "a.test", "/", nil, nil)
		held <- body
	}()
	<-arrived
	if old := gw.Swap(newR); old != oldR {
		t.Fatal("Swap returns the previous router")
	}
	for range 3 {
		if _, body := gw.do(t, "GET", "a.test", "/", nil, nil); body != "new" {
			t.Fatalf("a new request reached %q, want the new router's backend", body)
		}
	}
	oldR.Close() // closing the old router does not cut the request in flight
	close(release)
	if body := <-held; body != "old" {
		t.Errorf("the request in flight got %q, want the old backend's answer", body)
	}
}

func TestGateway_PanicInPluginAnswers500(t *testing.T) {
	var backendCalls atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		backendCalls.Add(1)
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_steps, config: {tag: p, panic: access}}]
  - {id: b, frontend: {domains: [b.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	res, body := gw.do(t, "GET", "a.test", "/", nil, nil)
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != 500 || body != `{"error":"plugin \"test_steps\" failed","request_id":"`+id+`"}`+"\n" {
		t.Errorf("got %d %q", res.StatusCode, body)
	}
	if backendCalls.Load() != 0 {
		t.Error("the backend was called after the plugin panicked")
	}
	// The gateway still serves.
	if res, _ := gw.do(t, "GET", "b.test", "/", nil, nil); res.StatusCode != 200 {
		t.Errorf("after a panic: %d", res.StatusCode)
	}
}

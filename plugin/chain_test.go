package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reapergw/reaper/internal/conf"
)

func TestChain_StepsAndPluginsRunInOrder(t *testing.T) {
	b := echoBackend(t)
	calls := &callLog{}
	r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["$B"]}
    plugins:
      - {plugin: test_steps, config: {tag: one}}
      - {plugin: test_steps, enabled: false, config: {tag: off}}
      - {plugin: test_steps, config: {tag: two}}
`, map[string]string{"B": b.URL}, map[string]any{"calls": calls})
	gw := newTestGateway(t, r)
	res, body := gw.do(t, "GET", "a.test", "/", nil, nil)
	if res.StatusCode != 200 {
		t.Fatal(res.Status)
	}
	want := []string{"one:pre", "two:pre", "one:access", "two:access", "one:request", "two:request", "one:response", "two:response"}
	if got := calls.list(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	expect(t, body, "X-Chain", "one|two")
	if got := res.Header.Values("X-Chain-Response"); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("response transformers: %q", got)
	}
}

func TestChain_IncludeExclude(t *testing.T) {
	cases := []struct {
		name             string
		include, exclude []string
		path             string
		want             bool
	}{
		{"no patterns", nil, nil, "/x", true},
		{"include matches", []string{"/api/.*"}, nil, "/api/users", true},
		{"include is anchored", []string{"/api/.*"}, nil, "/v1/api/users", false},
		{"include must match the whole path", []string{"/api"}, nil, "/api/users", false},
		{"one of several includes", []string{"/a", "/b/.*"}, nil, "/b/c", true},
		{"include none matches", []string{"/a"}, nil, "/b", false},
		{"exclude matches", nil, []string{"/health"}, "/health", false},
		{"exclude does not match", nil, []string{"/health"}, "/healthz", true},
		{"exclude wins over include", []string{"/api/.*"}, []string{"/api/health"}, "/api/health", false},
		{"include with exclude elsewhere", []string{"/api/.*"}, []string{"/api/health"}, "/api/users", true},
		{"alternation stays anchored", []string{"/a|/b"}, nil, "/bc", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var errs conf.Errors
			inst := compilePlugin(&PluginConfig{Plugin: "test_steps", Include: tc.include, Exclude: tc.exclude, Enabled: true}, "p", &errs)
			if errs.Len() > 0 {
				t.Fatal(errs.Err())
			}
			if got := inst.appliesTo(tc.path); got != tc.want {
				t.Errorf("appliesTo(%q) = %v", tc.path, got)
			}
		})
	}
}

// TestChain_IncludeExcludeThroughTheGateway: patterns see the request's path
// before strip_path, with dot segments resolved, and a plugin that does not apply
// is skipped in every step.
func TestChain_IncludeExcludeThroughTheGateway(t *testing.T) {
	b := echoBackend(t)
	calls := &callLog{}
	r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test/api]}
    backend: {targets: ["$B"]}
    plugins:
      - {plugin: test_steps, include: ["/api/private/.*"], exclude: ["/api/private/health"], config: {tag: guard, answer: access}}
`, map[string]string{"B": b.URL}, map[string]any{"calls": calls})
	gw := newTestGateway(t, r)
	cases := []struct {
		path   string
		status int
	}{
		{"/api/public", 200},
		{"/api/private/data", 403},
		{"/api/public/../private/data", 403}, // no way around the pattern
		{"/api//private/data", 403},
		{"/api/private/health", 200},
	}
	for _, tc := range cases {
		res, _ := gw.do(t, "GET", "a.test", tc.path, nil, nil)
		if res.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.path, res.StatusCode, tc.status)
		}
	}
	// Skipped plugins are skipped in every step.
	want := []string{"guard:pre", "guard:access", "guard:pre", "guard:access", "guard:pre", "guard:access"}
	if got := calls.list(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}

func TestChain_AnswerStopsTheChain(t *testing.T) {
	var backendCalls atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { backendCalls.Add(1) }))
	defer b.Close()
	for _, step := range []string{"pre", "access"} {
		t.Run(step, func(t *testing.T) {
			calls := &callLog{}
			r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["$B"]}
    plugins:
      - {plugin: test_steps, config: {tag: first, answer: $STEP}}
      - {plugin: test_steps, config: {tag: second}}
`, map[string]string{"B": b.URL, "STEP": step}, map[string]any{"calls": calls})
			gw := newTestGateway(t, r)
			res, body := gw.do(t, "GET", "a.test", "/", nil, nil)
			id := res.Header.Get("X-Request-Id")
			if res.StatusCode != 403 || body != `{"denied_by":"first","request_id":"`+id+`"}`+"\n" {
				t.Errorf("got %d %q", res.StatusCode, body)
			}
			if res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", res.Header.Get("Content-Type"))
			}
			var want []string
			if step == "pre" {
				want = []string{"first:pre"}
			} else {
				want = []string{"first:pre", "second:pre", "first:access"}
			}
			if got := calls.list(); !slices.Equal(got, want) {
				t.Errorf("calls %q, want %q", got, want)
			}
			if n := backendCalls.Load(); n != 0 {
				t.Errorf("backend called %d times", n)
			}
			if line := gw.accessLine(t, id); line["upstream"] != "gateway" || line["status"] != int64(403) {
				t.Errorf("access line %v", line)
			}
		})
	}
}

func TestChain_PluginFailures(t *testing.T) {
	var backendCalls atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { backendCalls.Add(1) }))
	defer b.Close()
	cases := []struct {
		config      string
		status      int
		backendHits int32
	}{
		{"{tag: x, fail: pre}", 500, 0},
		{"{tag: x, fail: access}", 500, 0},
		{"{tag: x, fail: request}", 500, 0},
		{"{tag: x, fail: response}", 502, 1},
		{"{tag: x, panic: pre}", 500, 0},
		{"{tag: x, panic: request}", 500, 0},
		{"{tag: x, panic: response}", 502, 1},
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			backendCalls.Store(0)
			logs := &logSink{}
			r := buildRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_steps, config: $C}]
`, map[string]string{"B": b.URL, "C": tc.config}, BuildOptions{Logger: slog.New(logs)})
			gw := newTestGateway(t, r)
			res, body := gw.do(t, "GET", "a.test", "/", nil, nil)
			id := res.Header.Get("X-Request-Id")
			if res.StatusCode != tc.status || body != `{"error":"plugin \"test_steps\" failed","request_id":"`+id+`"}`+"\n" {
				t.Errorf("got %d %q", res.StatusCode, body)
			}
			if n := backendCalls.Load(); n != tc.backendHits {
				t.Errorf("backend called %d times, want %d", n, tc.backendHits)
			}
			// The error is logged with the request id and route, not shown.
			if strings.Contains(body, "failure in") || strings.Contains(body, "boom") {
				t.Errorf("the error leaked into the body: %q", body)
			}
			logged := false
			for _, m := range []string{"plugin failed", "plugin panicked"} {
				for _, rec := range logs.find(m) {
					logged = logged || rec["request_id"] == id && rec["route"] == "a" && rec["plugin"] == "test_steps"
				}
			}
			if !logged {
				t.Error("no log line about the failure with the request id")
			}
		})
	}
}

// TestChain_OnDoneAfterStreamingBody: OnDone runs once the streamed response has
// been fully written, not when the headers are.
func TestChain_OnDoneAfterStreamingBody(t *testing.T) {
	release := make(chan struct{})
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "second\n")
	}))
	defer b.Close()
	done := make(chan string, 1)
	r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_steps, config: {tag: t, on_done: done}}]
`, map[string]string{"B": b.URL}, map[string]any{"done": done})
	gw := newTestGateway(t, r)
	req, _ := http.NewRequest("GET", gw.srv.URL+"/", nil)
	req.Host = "a.test"
	res, err := gw.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if line, _ := br.ReadString('\n'); line != "first\n" {
		t.Fatalf("got %q", line)
	}
	select {
	case <-done:
		t.Fatal("OnDone ran while the body was still streaming")
	default:
	}
	close(release)
	if rest, _ := io.ReadAll(br); string(rest) != "second\n" {
		t.Fatalf("got %q", rest)
	}
	select {
	case tag := <-done:
		if tag != "t" {
			t.Errorf("tag %q", tag)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnDone did not run after the body ended")
	}
}

func TestChain_OnDoneAfterWebSocketCloses(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			c.Write(r.Context(), typ, msg)
		}
	}))
	defer b.Close()
	done := make(chan string, 1)
	r := mustRouter(t, `
routes:
  - id: ws
    frontend: {domains: [ws.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_steps, config: {tag: ws, on_done: done}}]
`, map[string]string{"B": b.URL}, map[string]any{"done": done})
	gw := newTestGateway(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(gw.srv.URL, "http"), &websocket.DialOptions{Host: "ws.test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.Read(ctx); err != nil || string(msg) != "ping" {
		t.Fatalf("read %q, %v", msg, err)
	}
	select {
	case <-done:
		t.Fatal("OnDone ran while the WebSocket was open")
	default:
	}
	c.Close(websocket.StatusNormalClosure, "")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("OnDone did not run after the WebSocket closed")
	}
}

func TestChain_OnDonePanicDoesNotStopTheOthers(t *testing.T) {
	logs := &logSink{}
	st := &state{g: NewGateway(GatewayOptions{Logger: slog.New(logs)})}
	var ran []string
	st.ex.OnDone(func() { ran = append(ran, "first registered") })
	st.ex.OnDone(func() { panic("boom") })
	st.ex.OnDone(func() { ran = append(ran, "last registered") })
	st.finish()
	if fmt.Sprint(ran) != "[last registered first registered]" {
		t.Errorf("ran %v, want every function, in reverse order", ran)
	}
	if len(logs.find("an OnDone function panicked")) != 1 {
		t.Error("the panic was not logged")
	}
}

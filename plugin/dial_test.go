package plugin

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestProxy_DialFailureRetry: the backend is down when the request arrives; a
// DialFailureHandler starts it and asks for a retry; the client gets the
// backend's answer, and a 1 MiB chunked body arrives intact.
func TestProxy_DialFailureRetry(t *testing.T) {
	addr, listen := reservedPort(t) // down: connections are refused

	backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "bytes=%d sha256=%x te=%v", n, h.Sum(nil), r.TransferEncoding)
	})}
	defer backend.Close()
	asked := &callLog{}
	dial := func(ex *Exchange, err error) (DialAction, *Answer) {
		asked.add(ex.ID)
		if !isDialFailure(err) {
			t.Errorf("handler got %v, want a dial failure", err)
		}
		l := listen() // "start" the backend
		if l == nil {
			return DialPass, nil
		}
		go backend.Serve(l)
		return DialRetry, nil
	}
	r := mustRouter(t, `
routes:
  - id: app
    frontend: {domains: [app.test]}
    backend: {targets: ["http://$A"]}
    plugins: [{plugin: test_dial}]
`, map[string]string{"A": addr}, map[string]any{"dial": dial})
	gw := newTestGateway(t, r, "127.0.0.1/32") // a trusted proxy: its X-Request-Id is the request's

	payload := make([]byte, 1<<20)
	rand.Read(payload)
	sum := sha256.Sum256(payload)
	req, _ := http.NewRequest("POST", gw.srv.URL+"/upload", io.NopCloser(strings.NewReader(string(payload))))
	req.Host = "app.test"
	req.ContentLength = -1 // chunked
	req.Header.Set("X-Request-Id", "retry-1")
	res, err := gw.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := fmt.Sprintf("bytes=%d sha256=%x te=[chunked]", len(payload), sum)
	if res.StatusCode != 200 || string(body) != want {
		t.Errorf("got %d %q, want 200 %q", res.StatusCode, body, want)
	}
	if got := asked.list(); len(got) != 1 || got[0] != "retry-1" {
		t.Errorf("handler asked %v, want once for retry-1", got)
	}
}

func TestProxy_DialFailureHandlerAnswersOrGivesUp(t *testing.T) {
	addr, _ := reservedPort(t)
	var calls atomic.Int32
	var mode atomic.Value
	mode.Store("answer")
	dial := func(ex *Exchange, err error) (DialAction, *Answer) {
		calls.Add(1)
		switch mode.Load() {
		case "answer":
			return DialAnswer, JSONAnswer(503, map[string]string{"status": "waking"})
		case "retry":
			return DialRetry, nil // the backend stays down: the retry fails too
		}
		return DialPass, nil
	}
	r := mustRouter(t, `
routes:
  - id: app
    frontend: {domains: [app.test]}
    backend: {targets: ["http://$A"]}
    plugins: [{plugin: test_dial}]
`, map[string]string{"A": addr}, map[string]any{"dial": dial})
	gw := newTestGateway(t, r)

	res, body := gw.do(t, "GET", "app.test", "/", nil, nil)
	if res.StatusCode != 503 || body != `{"status":"waking"}`+"\n" || res.Header.Get("X-Request-Id") == "" {
		t.Errorf("answer: %d %q", res.StatusCode, body)
	}
	mode.Store("retry")
	calls.Store(0)
	res, _ = gw.do(t, "GET", "app.test", "/", nil, nil)
	if res.StatusCode != 502 || calls.Load() != 1 {
		t.Errorf("retry of a dead backend: %d after %d calls, want 502 after 1 (one retry at most)", res.StatusCode, calls.Load())
	}
	mode.Store("nothing")
	calls.Store(0)
	res, _ = gw.do(t, "GET", "app.test", "/", nil, nil)
	if res.StatusCode != 502 || calls.Load() != 1 {
		t.Errorf("no decision: %d after %d calls, want 502 after 1", res.StatusCode, calls.Load())
	}
}

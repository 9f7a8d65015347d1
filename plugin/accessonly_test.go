package plugin

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// An AccessOnly gateway (the forward-auth listener's) runs the route's steps
// and never reaches its backend: a request they let through gets the marked
// empty 200, one they answer gets that answer.
func TestGateway_AccessOnlyRunsTheStepsAndNeverProxies(t *testing.T) {
	var hits atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(backend.Close)
	calls := &callLog{}
	r := mustRouter(t, `
routes:
  - id: open
    frontend: {domains: [open.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_steps, config: {tag: a}}]
  - id: shut
    frontend: {domains: [shut.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_steps, config: {tag: b, answer: access}}]
`, map[string]string{"B": backend.URL}, map[string]any{"calls": calls})
	obs := &doneRecorder{}
	g := NewGateway(GatewayOptions{Logger: slog.New(slog.DiscardHandler), AccessOnly: true, Observer: obs})
	g.Swap(r)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	get := func(host string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Host = host
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get("open.test"); res.StatusCode != 200 || res.Header.Get(HeaderAccessAllowed) != "allow" || res.ContentLength != 0 {
		t.Errorf("let through: %d %v", res.StatusCode, res.Header)
	}
	if res := get("shut.test"); res.StatusCode != 403 || res.Header.Get(HeaderAccessAllowed) != "" {
		t.Errorf("answered by the step: %d %v", res.StatusCode, res.Header)
	}
	// No backend answered either: metrics count both as the gateway's.
	for _, d := range obs.list() {
		if !d.ByGateway {
			t.Errorf("observed %+v as answered by a backend", d)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the backend was reached %d times", n)
	}
	if got := calls.list(); !contains(got, "a:access") || !contains(got, "b:access") || contains(got, "a:request") {
		t.Errorf("steps run: %v; want both access steps and no request transform", got)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

type doneRecorder struct {
	mu   sync.Mutex
	done []RequestDone
}

func (r *doneRecorder) ObserveRequest(d RequestDone) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = append(r.done, d)
}

func (r *doneRecorder) list() []RequestDone {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RequestDone(nil), r.done...)
}

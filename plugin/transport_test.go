package plugin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

func TestTransport_MaxConnectionsBoundsABurst(t *testing.T) {
	var open, peak atomic.Int64
	release := make(chan struct{})
	const limit, burst = 3, 12
	var seen atomic.Int64
	three := make(chan struct{})
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == limit {
			close(three)
		}
		<-release
		w.Write([]byte("ok"))
	}))
	backend.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			if n := open.Add(1); n > peak.Load() {
				peak.Store(n)
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	backend.Start()
	defer backend.Close()
	r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["$B"], max_connections: 3}
`, map[string]string{"B": backend.URL}, nil)
	tg := newTestGateway(t, r)

	var done sync.WaitGroup
	codes := make(chan int, burst)
	for range burst {
		done.Add(1)
		go func() {
			defer done.Done()
			res, _ := tg.do(t, "GET", "a.test", "/", nil, nil)
			codes <- res.StatusCode
		}()
	}
	<-three // three are at the backend; the others wait for a connection
	close(release)
	done.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("status %d, want every request answered", c)
		}
	}
	if p := peak.Load(); p > limit {
		t.Errorf("%d connections to the backend at once, want at most %d", p, limit)
	}
}

// A route drops the idle connections to its own backends, shared with the other
// routes on them, and leaves every other backend's alone.
func TestRoute_DropIdleConnectionsOfItsBackendsOnly(t *testing.T) {
	type backend struct {
		srv            *httptest.Server
		opened, closed atomic.Int64
	}
	start := func() *backend {
		b := &backend{}
		b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
		b.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				b.opened.Add(1)
			case http.StateClosed:
				b.closed.Add(1)
			}
		}
		b.srv.Start()
		t.Cleanup(b.srv.Close)
		return b
	}
	a, b := start(), start()
	r := mustRouter(t, `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["$A"]}}
  - {id: a2, frontend: {domains: [a2.test]}, backend: {targets: ["$A"]}}
  - {id: b, frontend: {domains: [b.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"A": a.srv.URL, "B": b.srv.URL}, nil)
	tg := newTestGateway(t, r)
	for _, host := range []string{"a.test", "a2.test", "b.test"} {
		if res, _ := tg.do(t, "GET", host, "/", nil, nil); res.StatusCode != 200 {
			t.Fatalf("%s: %d", host, res.StatusCode)
		}
	}
	if a.opened.Load() != 1 || b.opened.Load() != 1 {
		t.Fatalf("connections opened: a %d, b %d; want one each (a and a2 share a's pool)", a.opened.Load(), b.opened.Load())
	}
	routeNamed(t, r, "a2").DropIdleConnections()
	testwait.For(t, 5*time.Second, "a's idle connection closed", func() bool { return a.closed.Load() == 1 })
	if res, _ := tg.do(t, "GET", "a.test", "/", nil, nil); res.StatusCode != 200 || a.opened.Load() != 2 {
		t.Errorf("after the drop: %d, %d connections opened to a; want 200 on a new one", res.StatusCode, a.opened.Load())
	}
	if b.closed.Load() != 0 {
		t.Errorf("b's connection was closed too")
	}
	if res, _ := tg.do(t, "GET", "b.test", "/", nil, nil); res.StatusCode != 200 || b.opened.Load() != 1 {
		t.Errorf("b: %d, %d connections opened; want its first one reused", res.StatusCode, b.opened.Load())
	}
}

// routeNamed returns the built route with that id.
func routeNamed(t *testing.T, r *Router, id string) *Route {
	t.Helper()
	for _, route := range r.routes {
		if route.ID == id {
			return route
		}
	}
	t.Fatalf("no route %s", id)
	return nil
}

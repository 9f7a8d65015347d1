package plugin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
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

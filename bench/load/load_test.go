package load

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// countingServer serves h on loopback and counts the connections it accepted and
// the requests it answered.
type countingServer struct {
	*httptest.Server
	conns, open, requests atomic.Int64
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
			s.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.open.Add(-1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) addr() string { return s.Listener.Addr().String() }

func TestRun_KeepsOneConnectionPerWorker(t *testing.T) {
	var badHost atomic.Value
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "bench.test" || r.Header.Get("Accept") != "application/json" || r.URL.Path != "/p" {
			badHost.Store(r.Host + " " + r.Header.Get("Accept") + " " + r.URL.Path)
		}
		io.WriteString(w, `{"ok":true}`)
	})
	var marks []string
	var openAtEnd int64
	res, err := Run(context.Background(), Options{
		Addr: s.addr(), Host: "bench.test", Path: "/p", Header: [][2]string{{"Accept", "application/json"}},
		Conns: 4, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond,
		AtStart: func() { marks = append(marks, "start") },
		AtEnd: func() {
			marks = append(marks, "end")
			openAtEnd = s.open.Load()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := badHost.Load(); v != nil {
		t.Errorf("server saw %q, want bench.test application/json /p", v)
	}
	if !res.Clean() || res.Problem() != "" {
		t.Errorf("problem: %s", res.Problem())
	}
	if res.Dials != 4 || s.conns.Load() != 4 {
		t.Errorf("dials %d, server accepted %d, want 4 each", res.Dials, s.conns.Load())
	}
	if res.Requests < 10 || uint64(res.Requests) != res.Latency.Count() || res.Requests > s.requests.Load() {
		t.Errorf("requests %d, latencies %d, server answered %d", res.Requests, res.Latency.Count(), s.requests.Load())
	}
	if res.Elapsed < 200*time.Millisecond || res.Elapsed > 2*time.Second || res.RPS() <= 0 {
		t.Errorf("elapsed %v, rps %v", res.Elapsed, res.RPS())
	}
	if strings.Join(marks, ",") != "start,end" {
		t.Errorf("marks %v, want start,end", marks)
	}
	// AtEnd sees the run as it was: every connection still open.
	if openAtEnd != 4 {
		t.Errorf("%d connections open when AtEnd ran, want 4", openAtEnd)
	}
}

func TestRun_CountsNon2xx(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	res, err := Run(context.Background(), Options{Addr: s.addr(), Conns: 2, Duration: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Non2xx == 0 || res.FirstNon2xx != http.StatusServiceUnavailable || res.Errors != 0 || res.Clean() {
		t.Errorf("non2xx %d (first %d), errors %d", res.Non2xx, res.FirstNon2xx, res.Errors)
	}
	if !strings.Contains(res.Problem(), "non-2xx answers (first: 503)") {
		t.Errorf("problem %q", res.Problem())
	}
}

func TestRun_ClosedConnectionsAreErrorsAndRedialed(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close() // no answer at all
		}
	})
	res, err := Run(context.Background(), Options{Addr: s.addr(), Conns: 1, Duration: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors < 2 || res.FirstError == nil || res.Dials < 2 || res.Requests != 0 {
		t.Errorf("errors %d (first %v), dials %d, requests %d", res.Errors, res.FirstError, res.Dials, res.Requests)
	}
}

func TestRun_ConnectionCloseAnswersRedialWithoutErrors(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	res, err := Run(context.Background(), Options{Addr: s.addr(), Conns: 1, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Clean() || res.Requests < 2 || res.Dials < res.Requests {
		t.Errorf("problem %q, requests %d, dials %d: want one dial per request", res.Problem(), res.Requests, res.Dials)
	}
}

func TestRun_DeadTargetCountsDialErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	res, err := Run(context.Background(), Options{Addr: addr, Conns: 1, Duration: 120 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// One dial every dialBackoff: a few, not a busy loop.
	if res.Errors < 1 || res.Errors > 10 || !strings.Contains(res.FirstError.Error(), "dial") {
		t.Errorf("errors %d, first %v", res.Errors, res.FirstError)
	}
}

func TestRun_CancelUnblocksHungRequests(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Options{Addr: s.addr(), Conns: 3, Duration: time.Hour, Timeout: time.Hour})
		done <- err
	}()
	testwait.Until(5*time.Second, func() bool { return s.requests.Load() >= 3 }) // every worker has a request in flight
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run still blocked 5s after its context ended")
	}
}

func TestRun_BadOptions(t *testing.T) {
	for _, o := range []Options{
		{Conns: 1, Duration: time.Second},
		{Addr: "x:1", Conns: 0, Duration: time.Second},
		{Addr: "x:1", Conns: 1},
		{Addr: "x:1", Conns: 1, Duration: time.Second, Warmup: -1},
	} {
		if _, err := Run(context.Background(), o); !errors.Is(err, ErrOptions) {
			t.Errorf("Run(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/bench/procfs"
	"github.com/reapergw/reaper/internal/testwait"
)

// TestHeldRun_SeesEveryRequestHeldThenEveryAnswer plays reaper with a server
// that holds every request until released, and checks the part's machinery:
// every request sent on its own connection, "all held" seen in /proc/net/tcp
// before any answer, then every answer read and tallied by pid.
func TestHeldRun_SeesEveryRequestHeldThenEveryAnswer(t *testing.T) {
	const n = 50
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseAll)
	var arrived atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != heldHost {
			http.Error(w, "wrong host", http.StatusBadRequest)
			return
		}
		arrived.Add(1)
		<-release
		fmt.Fprint(w, `{"name":"held","pid":42,"listening_at":"x"}`)
	}))
	defer srv.Close()
	gw := netip.MustParseAddrPort(srv.Listener.Addr().String())

	run := &heldRun{host: heldHost, reqs: make([]*heldRequest, n)}
	defer run.closeAll()
	if err := run.send(context.Background(), gw.String(), n); err != nil {
		t.Fatal(err)
	}
	var s procfs.ServerSockets
	if !testwait.Until(5*time.Second, func() bool {
		var err error
		if s, err = procfs.ReadServerSockets(gw); err != nil {
			t.Fatal(err)
		}
		return s.Established >= n && s.Settled()
	}) {
		t.Fatalf("sockets %+v never settled", s)
	}
	// Settled means the server read every request: each handler has started.
	testwait.For(t, 5*time.Second, "every handler to start", func() bool { return arrived.Load() == n })
	if a := run.answered.Load(); a != 0 {
		t.Fatalf("%d answered before the release", a)
	}

	released := time.Now()
	releaseAll()
	run.wg.Wait()
	r := run.tally()
	if r.ok != n || r.errors != 0 || len(r.pids) != 1 || r.pids[42] != n {
		t.Errorf("tally %+v", r)
	}
	if ok := run.okAfter(released); len(ok) != n || ok[0] < 0 || !slices.IsSorted(ok) {
		t.Errorf("times of the 200s from the release: %v", ok)
	}
}

func TestHeldRun_TalliesRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		http.Error(w, `{"error":"too many requests are waiting"}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	run := &heldRun{host: heldHost, reqs: make([]*heldRequest, 3)}
	defer run.closeAll()
	if err := run.send(context.Background(), srv.Listener.Addr().String(), 3); err != nil {
		t.Fatal(err)
	}
	run.wg.Wait()
	r := run.tally()
	if r.ok != 0 || r.errors != 3 || r.firstErr == "" || run.firstAnswer() == "none found" {
		t.Errorf("tally %+v, first answer %q", r, run.firstAnswer())
	}
}

// TestHeldRun_ARequestWithoutAnAnswerInTimeIsAnError: waitAnswers ends the reads
// still waiting when its time is up, and they count as errNoAnswer.
func TestHeldRun_ARequestWithoutAnAnswerInTimeIsAnError(t *testing.T) {
	stuck := make(chan struct{})
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 2 {
			<-stuck // never answered while the run waits
		}
		fmt.Fprint(w, `{"name":"held","pid":42,"listening_at":"x"}`)
	}))
	defer srv.Close()
	defer close(stuck)
	run := &heldRun{host: heldHost, reqs: make([]*heldRequest, 3)}
	defer run.closeAll()
	if err := run.send(context.Background(), srv.Listener.Addr().String(), 3); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "two answers", func() bool { return run.answered.Load() == 2 })
	if err := run.waitAnswers(context.Background(), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r := run.tally()
	if r.ok != 2 || r.errors != 1 || r.firstErr != errNoAnswer.Error() {
		t.Errorf("tally %+v, want 2 answers and one %q", r, errNoAnswer)
	}
}

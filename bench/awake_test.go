package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRoundOrder_EachOnceAndVaried(t *testing.T) {
	firsts := map[string]bool{}
	var orders [][]string
	for r := range 4 {
		o := roundOrder(contestantKeys, r)
		if !slices.Equal(slices.Sorted(slices.Values(o)), slices.Sorted(slices.Values(contestantKeys))) {
			t.Fatalf("round %d: %v is not a permutation", r, o)
		}
		firsts[o[0]] = true
		orders = append(orders, o)
	}
	if !slices.Equal(orders[0], contestantKeys) {
		t.Errorf("round 0 = %v, want the base order", orders[0])
	}
	if slices.Equal(orders[0], orders[1]) || slices.Equal(orders[1], orders[2]) {
		t.Errorf("consecutive rounds in the same order: %v", orders)
	}
	if len(firsts) < 2 {
		t.Errorf("always the same contestant first: %v", orders)
	}
}

// fakeSample builds a sample with rps answers per second over one second, a
// CPU cost per request and a latency for every answer.

func TestMeasure_ReadsCPUAndFailsLoudly(t *testing.T) {
	var status atomic.Int64
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "bench.test" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	// This process is both the "proxy" and the app: its CPU time per answer
	// must be measured.
	ct := contestant{key: kPlain, addr: addr.String(), host: "bench.test", cpuPid: os.Getpid()}
	spec := runSpec{conns: 2, warmup: 50 * time.Millisecond, duration: 300 * time.Millisecond, rounds: 1}
	s, err := measure(context.Background(), ct, addr, spec)
	if err != nil {
		t.Fatal(err)
	}
	if s.res.Requests == 0 || s.cpuPerReq <= 0 || s.res.Dials != 2 {
		t.Errorf("requests %d, cpu/req %v, dials %d", s.res.Requests, s.cpuPerReq, s.res.Dials)
	}
	if s.appClosed != 0 {
		t.Errorf("%d connections to the server closed during the window, want 0", s.appClosed)
	}

	status.Store(http.StatusBadGateway)
	_, err = measure(context.Background(), ct, addr, spec)
	if err == nil || !strings.Contains(err.Error(), "non-2xx answers (first: 502)") {
		t.Errorf("err = %v, want the 502s named", err)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Part E: wake latency. One reaper runs one demo app per measured wake, each
// taking 300 ms to open its port, behind routes in hold mode with a 1 s grace
// period, with the full pass every second. The bench wakes every app once, waits
// until reaper has put them all back to sleep (status Down), then wakes them one
// at a time and takes, for each, the time from the app's port opening
// (listening_at, in the app's answer) to the moment the held request's answer is
// read. Both are this machine's wall clock.
//
// The last lines wake the first app again as soon as it is back asleep, a few
// seconds after its previous wake ask: reaper coalesces asks within one sleep
// only, so that wake must cost no more than the others.

const (
	wakeBootDelay = 300 * time.Millisecond
	// targetWakeMedian is issue 3's target for the median.
	targetWakeMedian = 30 * time.Millisecond
	// sleepTimeout bounds the wait for reaper to put an app to sleep: grace
	// period + a job interval + the stop, with a wide margin.
	sleepTimeout = 20 * time.Second
)

// wake is one measured wake.
type wake struct {
	latency time.Duration // port open → answer read
	total   time.Duration // request sent → answer read
	pid     int
}

func wakeHost(i int) string { return fmt.Sprintf("wake%d.test", i) }
func wakeApp(i int) string  { return fmt.Sprintf("wake%d", i) }

func runWake(ctx context.Context, e *env) ([]verdict, error) {
	n := 10
	if e.opts.quick {
		n = 3
	}
	addrs := make([]string, n)
	for i := range addrs {
		var err error
		if addrs[i], err = freeAddr(); err != nil {
			return nil, err
		}
	}
	cfg := wakeConfig(e.demoBin, addrs)
	e.progressf("E: starting reaper with %d demo apps that boot in %s", n, wakeBootDelay)
	node, err := startReaper(ctx, e, "wake", cfg)
	if err != nil {
		return nil, err
	}
	defer node.shutdown(e.demoBin)
	c := newClient(30 * time.Second)
	defer c.CloseIdleConnections()

	// Prime: wake every app at once, then let reaper put them all to sleep.
	e.progressf("E: waking the %d apps once, then waiting for reaper to put them to sleep", n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, _, errs[i] = getApp(ctx, c, node.gateway, wakeHost(i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("priming %s: %w", wakeApp(i), err)
		}
	}
	for i := range n {
		if err := waitStatus(ctx, c, node.gateway, wakeHost(i), "Down", sleepTimeout); err != nil {
			return nil, err
		}
	}
	var got []wake
	firstWake := time.Now() // the ask of app 0's measured wake
	for i := range n {
		e.progressf("E: wake %d/%d", i+1, n)
		w, err := measureWake(ctx, c, node.gateway, wakeHost(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", wakeApp(i), err)
		}
		got = append(got, w)
	}

	// Context: the first app again, as soon as reaper has put it back to sleep,
	// within seconds of its previous wake ask.
	e.progressf("E: one more wake of %s right after it went back to sleep", wakeApp(0))
	if err := waitStatus(ctx, c, node.gateway, wakeHost(0), "Down", sleepTimeout); err != nil {
		return nil, err
	}
	sinceAsk := time.Since(firstWake)
	quick, err := measureWake(ctx, c, node.gateway, wakeHost(0))
	if err != nil {
		return nil, fmt.Errorf("%s, woken again: %w", wakeApp(0), err)
	}

	starts := make([]int, n)
	for i := range n {
		starts[i] = node.log.countMsg("app woken", wakeApp(i))
	}
	return printE(e.out, got, starts, quick, sinceAsk), nil
}

// wakeConfig is the reaper of part E: one app per address.
func wakeConfig(demoBin string, addrs []string) reaperConfig {
	cfg := reaperConfig{
		Node:   newNodeConfig("bench-wake"),
		Reaper: &jobConfig{JobInterval: "1s"},
		PaaS:   paasConfig{Driver: "process"},
	}
	for i, addr := range addrs {
		cfg.PaaS.Apps = append(cfg.PaaS.Apps, demoApp(demoBin, wakeApp(i), addr, "--boot-delay", wakeBootDelay.String()))
		cfg.Routes = append(cfg.Routes, reaperRoute(wakeApp(i), wakeHost(i), addr, reaperPluginConfig{
			AppID: wakeApp(i), GracePeriod: "1s", FailTimeout: "30s", APIBehavior: "hold",
		}))
	}
	return cfg
}

// measureWake sends one request to a sleeping app and times it.
func measureWake(ctx context.Context, c *http.Client, gateway, host string) (wake, error) {
	t0 := time.Now()
	info, a, err := getApp(ctx, c, gateway, host)
	if err != nil {
		return wake{}, err
	}
	listening, err := time.Parse(time.RFC3339Nano, info.ListeningAt)
	if err != nil {
		return wake{}, fmt.Errorf("listening_at %q: %w", info.ListeningAt, err)
	}
	// a.receivedAt carries a monotonic reading and listening does not: Sub then
	// uses the wall clocks, which is what both are.
	return wake{latency: a.receivedAt.Sub(listening), total: a.receivedAt.Sub(t0), pid: info.PID}, nil
}

func printE(w io.Writer, got []wake, starts []int, again wake, sinceAsk time.Duration) []verdict {
	lat := pick2(got, func(x wake) time.Duration { return x.latency })
	total := pick2(got, func(x wake) time.Duration { return x.total })
	fmt.Fprintf(w, "\nE. Wake latency: %d wakes of demo apps that boot in %s (hold mode; each put to sleep by reaper before)\n", len(got), wakeBootDelay)
	fmt.Fprintf(w, "   port open → held request answered:     median %s, p90 %s (min %s, max %s)\n",
		millis(median(lat)), millis(quantile(lat, 0.9)), millis(slices.Min(lat)), millis(slices.Max(lat)))
	each := make([]string, len(lat))
	for i, d := range lat {
		each[i] = millis(d)
	}
	fmt.Fprintf(w, "   each wake: %v\n", each)
	fmt.Fprintf(w, "   request sent → answered (boot included): median %s\n", millis(median(total)))
	fmt.Fprintf(w, "   starts logged per app (\"app woken\": priming + measured wake): %v\n", starts)
	fmt.Fprintf(w, "   context: the same app woken again right after it went back to sleep (%s after its previous wake ask):\n", sinceAsk.Round(100*time.Millisecond))
	fmt.Fprintf(w, "     request sent → answered %s (boot %s); port open → answered %s\n", millis(again.total), wakeBootDelay, millis(again.latency))
	fmt.Fprintf(w, "     (asks are coalesced within one sleep only: a request right after the app went back to sleep asks at once)\n")

	m := median(lat)
	// Each app: the priming wake and the measured one; the first app also the
	// context wake.
	startsOK := len(starts) > 0
	for i, s := range starts {
		startsOK = startsOK && (s == 2 || i == 0 && s == 3)
	}
	startsOK = startsOK && starts[0] == 3
	pids := map[int]bool{again.pid: true}
	for _, x := range got {
		pids[x.pid] = true
	}
	return []verdict{
		{"E", "wake latency, port open → held request answered, median", millis(m), "≤ " + millis(targetWakeMedian), m <= targetWakeMedian, ""},
		{"E", "one start per wake (\"app woken\" lines, distinct pids)", fmt.Sprintf("%d pids", len(pids)), fmt.Sprintf("%d", len(got)+1), startsOK && len(pids) == len(got)+1, ""},
	}
}

// pick2 returns f of every element of xs.
func pick2[E, T any](xs []E, f func(E) T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// quantile returns the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

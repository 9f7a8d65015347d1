package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Part G, the ask latency: a request for a sleeping app sent to a follower, timed
// to the arrival of the leader's start call at the fake Clever Cloud.

const (
	// startCallTimeout bounds the wait for the platform to see an ask's start.
	startCallTimeout = 10 * time.Second
	// askGap separates two asks, so that each finds the leader idle.
	askGap = 100 * time.Millisecond
	// heldTimeout bounds the wait for the held requests' answers.
	heldTimeout = 60 * time.Second
)

// askResult is one measured ask.
type askResult struct {
	via     string        // the follower the request went to
	latency time.Duration // request written → the start call reached the platform
	held    heldAnswer
}

// heldAnswer is how the held request ended.
type heldAnswer struct {
	status int
	appOK  bool          // the body is the app's own answer (its id)
	total  time.Duration // request written → answer read
	at     time.Time     // when the answer was read, or the request failed
	err    error
}

// measureAsks sends one request per sleeping app to a follower (alternating
// between the two) and times each start call; then it waits for every held
// request's answer. It returns the results and the leader's id.
func (c *benchCluster) measureAsks(ctx context.Context) ([]askResult, string, error) {
	lead, _, err := c.WaitWhole(ctx, wholeTimeout)
	if err != nil {
		return nil, "", err
	}
	followers := c.Others(lead)
	hc := clusterenv.NewClient(heldTimeout)
	defer hc.CloseIdleConnections()
	out := make([]askResult, len(c.apps))
	var wg sync.WaitGroup
	defer wg.Wait()
	// On an error, the requests still held are given up at once (deferred last,
	// runs first).
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, app := range c.apps {
		n := followers[i%len(followers)]
		out[i].via = n.ID
		written := make(chan time.Time, 1)
		ended := make(chan struct{})
		wg.Go(func() {
			defer close(ended)
			out[i].held = holdRequest(rctx, hc, n.Gateway, clusterHost(i), app, written)
		})
		var t0 time.Time
		select {
		case t0 = <-written:
		case <-ended:
			return nil, "", fmt.Errorf("request for %s through %s: %d %v", clusterHost(i), n.ID, out[i].held.status, out[i].held.err)
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
		at, err := c.waitStartCall(ctx, app, startCallTimeout)
		if err != nil {
			return nil, "", fmt.Errorf("request for %s through %s: %w", clusterHost(i), n.ID, err)
		}
		out[i].latency = at.Sub(t0)
		c.e.progressf("G:   ask %d/%d through %s: start call %s after the request", i+1, len(c.apps), n.ID, millis(out[i].latency))
		if !clusterenv.SleepCtx(ctx, askGap) {
			return nil, "", ctx.Err()
		}
	}
	c.e.progressf("G: waiting for the %d held requests to be answered", len(c.apps))
	wg.Wait()
	return out, lead.ID, nil
}

// waitStartCall waits until the fake has answered a start of app, and returns the
// time the call arrived.
func (c *benchCluster) waitStartCall(ctx context.Context, app string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		// Starts is cheap; the list of calls is read once a start is counted
		// (the call is recorded when its answer is written).
		if c.fake.Starts(app) > 0 {
			if at, ok := startCallAt(c.fake.Calls(), app); ok {
				return at, nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("bench: no start call for %s reached the platform within %s", app, timeout)
		}
		if !clusterenv.SleepCtx(ctx, time.Millisecond) { // poll interval; the figure is the fake's own time
			return time.Time{}, ctx.Err()
		}
	}
}

// startCallAt returns the arrival time of the first accepted start call (POST
// …/applications/{app}/instances) of app.
func startCallAt(calls []fakeclever.Call, app string) (time.Time, bool) {
	for _, cl := range calls {
		if isStartCall(cl, app) && cl.Status/100 == 2 {
			return cl.At, true
		}
	}
	return time.Time{}, false
}

// isStartCall reports whether the call is a start of app, whatever its answer.
func isStartCall(cl fakeclever.Call, app string) bool {
	return cl.App == app && cl.Method == http.MethodPost && strings.HasSuffix(cl.Path, "/applications/"+app+"/instances")
}

// holdRequest sends an API request for the app behind host through gateway, sends
// the moment it is written on written, and reads the answer.
func holdRequest(ctx context.Context, hc *http.Client, gateway, host, app string, written chan<- time.Time) heldAnswer {
	var sent time.Time
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		once.Do(func() { sent = time.Now(); written <- sent })
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, "http://"+gateway+"/", nil)
	if err != nil {
		return heldAnswer{at: time.Now(), err: err}
	}
	req.Host = host
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "reaper-bench")
	resp, err := hc.Do(req)
	if err != nil {
		return heldAnswer{at: time.Now(), err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	now := time.Now()
	a := heldAnswer{status: resp.StatusCode, total: now.Sub(sent), at: now, err: err}
	var v struct {
		AppID string `json:"app_id"`
	}
	a.appOK = resp.StatusCode == http.StatusOK && json.Unmarshal(body, &v) == nil && v.AppID == app
	if !a.appOK && a.err == nil {
		a.err = fmt.Errorf("answered %d: %.200s", resp.StatusCode, body)
	}
	return a
}

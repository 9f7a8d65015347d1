package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// slowAPI stands between reaper and the fake Clever Cloud's API and gives every
// call the latency of a real platform's API: half of it before the call reaches
// the platform, half before its answer reaches reaper. A call whose client goes
// away in the first half never reaches the platform; in the second half, the
// platform has acted and the answer is lost. Both are a start "whose sending is
// uncertain" to the leader that sent it, when it is killed then.
//
// It records every start call (POST …/instances): when it came, whether it
// reached the platform, and when its answer was delivered.
type slowAPI struct {
	target *url.URL // the fake's bridge
	half   time.Duration
	tr     http.RoundTripper
	srv    *http.Server
	url    string

	mu     sync.Mutex
	starts []proxiedStart
}

// proxiedStart is one start call through the proxy.
type proxiedStart struct {
	app       string
	arrived   time.Time // at the proxy
	landed    time.Time // forwarded to the platform (zero: cut before)
	status    int       // the platform's answer, when it landed
	delivered time.Time // the answer written to reaper (zero: reaper was gone)
}

// newSlowAPI returns a proxy to target with that latency per call; start serves it.
func newSlowAPI(target string, latency time.Duration) (*slowAPI, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	return &slowAPI{target: u, half: latency / 2, tr: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}, nil
}

// start listens on a free loopback port; URL is then the proxy's base URL.
func (p *slowAPI) start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("bench: the API latency proxy: %w", err)
	}
	p.url = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return nil
}

// close stops the proxy, cutting the calls in flight.
func (p *slowAPI) close() {
	if p.srv != nil {
		_ = p.srv.Close()
	}
}

// startCallApp returns the app a start call names, or "" for another call.
func startCallApp(r *http.Request) string {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/instances") {
		return ""
	}
	parts := strings.Split(strings.TrimSuffix(r.URL.Path, "/instances"), "/")
	if len(parts) < 2 || parts[len(parts)-2] != "applications" {
		return ""
	}
	return parts[len(parts)-1]
}

func (p *slowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := proxiedStart{app: startCallApp(r), arrived: time.Now()}
	if rec.app != "" {
		defer func() {
			p.mu.Lock()
			p.starts = append(p.starts, rec)
			p.mu.Unlock()
		}()
	}
	if !clusterenv.SleepCtx(r.Context(), p.half) {
		return // the caller went away: the call never reaches the platform
	}
	resp, body, err := p.forward(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rec.landed, rec.status = time.Now(), resp.StatusCode
	if !clusterenv.SleepCtx(r.Context(), p.half) {
		return // the platform acted; the answer is lost with its caller
	}
	for k, vs := range resp.Header {
		if k != "Content-Length" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := w.Write(body); err == nil {
		rec.delivered = time.Now()
	}
}

// forward sends r to the platform, whether or not its caller stays (a call that
// landed is not undone), and reads the answer whole.
func (p *slowAPI) forward(r *http.Request) (*http.Response, []byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, nil, err
	}
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.Host = p.target.Host
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, nil, err
	}
	return resp, b, nil
}

// startsOf returns the start calls of app that came so far.
func (p *slowAPI) startsOf(app string) []proxiedStart {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []proxiedStart
	for _, s := range p.starts {
		if s.app == app {
			out = append(out, s)
		}
	}
	return out
}

// Where a kill fell against the dead leader's start call.
const (
	phaseBefore  = "before"  // no start call had come to the platform's API
	phaseSending = "sending" // a start call was on its way: it never reached the platform
	phaseLanded  = "landed"  // the platform had accepted a start, its answer was on its way
	phaseAfter   = "after"   // the leader had the platform's answer
)

// killPhase says where killed fell against the start calls of one wake.
func killPhase(starts []proxiedStart, killed time.Time) string {
	phase := phaseBefore
	for _, s := range starts {
		if !s.arrived.Before(killed) {
			continue
		}
		switch {
		case !s.delivered.IsZero() && s.delivered.Before(killed):
			return phaseAfter
		case !s.landed.IsZero() && s.landed.Before(killed):
			phase = phaseLanded
		case phase == phaseBefore:
			phase = phaseSending
		}
	}
	return phase
}

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const startPath = "/v2/organisations/orga_1/applications/app_1/instances"

// slowAPIFor returns a started slowAPI with that latency in front of a platform
// that answers every call 200 and counts the calls that reach it.
func slowAPIFor(t *testing.T, latency time.Duration) (*slowAPI, *atomic.Int64) {
	t.Helper()
	var reached atomic.Int64
	platform := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Platform", "yes")
		io.WriteString(w, `{"id":200,"message":"queued"}`)
	}))
	t.Cleanup(platform.Close)
	p, err := newSlowAPI(platform.URL, latency)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p, &reached
}

// post sends a start call through p, given up after giveUp (0: never).
func post(p *slowAPI, giveUp time.Duration) (*http.Response, string, error) {
	ctx := context.Background()
	if giveUp > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, giveUp)
		defer cancel()
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+startPath, nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// waitStarts waits until p has recorded n start calls of app_1.
func waitStarts(t *testing.T, p *slowAPI, n int) []proxiedStart {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if s := p.startsOf("app_1"); len(s) >= n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d start calls recorded, want %d", len(p.startsOf("app_1")), n)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}

func TestSlowAPI_AnswersAfterItsLatencyAndRecordsTheStart(t *testing.T) {
	p, reached := slowAPIFor(t, 100*time.Millisecond)
	began := time.Now()
	resp, body, err := post(p, 0)
	took := time.Since(began)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Platform") != "yes" || !strings.Contains(body, "queued") {
		t.Fatalf("answer %v %q, %v", resp, body, err)
	}
	if took < 100*time.Millisecond {
		t.Errorf("answered in %v, want at least the latency", took)
	}
	s := waitStarts(t, p, 1)[0]
	if reached.Load() != 1 || s.status != http.StatusOK || s.delivered.IsZero() {
		t.Fatalf("reached %d, recorded %+v", reached.Load(), s)
	}
	if d, a := s.landed.Sub(s.arrived), s.delivered.Sub(s.landed); d < 50*time.Millisecond || a < 50*time.Millisecond {
		t.Errorf("landed %v after it came, answered %v after that; want half the latency each", d, a)
	}
	if _, _, err := post(p, 0); err != nil || len(p.startsOf("app_0")) != 0 {
		t.Errorf("another app's starts: %v, %v", p.startsOf("app_0"), err)
	}
}

func TestSlowAPI_ACallCutInItsFirstHalfNeverReachesThePlatform(t *testing.T) {
	p, reached := slowAPIFor(t, 200*time.Millisecond)
	if _, _, err := post(p, 20*time.Millisecond); err == nil {
		t.Fatal("the call was answered before its latency")
	}
	s := waitStarts(t, p, 1)[0]
	if !s.landed.IsZero() || !s.delivered.IsZero() || reached.Load() != 0 {
		t.Errorf("recorded %+v, %d calls reached the platform; want none", s, reached.Load())
	}
}

func TestSlowAPI_ACallCutInItsSecondHalfLandsAndItsAnswerIsLost(t *testing.T) {
	p, reached := slowAPIFor(t, 200*time.Millisecond)
	if _, _, err := post(p, 150*time.Millisecond); err == nil {
		t.Fatal("the call was answered before its latency")
	}
	s := waitStarts(t, p, 1)[0]
	if s.landed.IsZero() || !s.delivered.IsZero() || reached.Load() != 1 {
		t.Errorf("recorded %+v, %d calls reached the platform; want it landed, its answer lost", s, reached.Load())
	}
}

func TestStartCallApp(t *testing.T) {
	for _, tt := range []struct {
		method, path, want string
	}{
		{http.MethodPost, startPath, "app_1"},
		{http.MethodPost, "/v2/self/applications/app_2/instances", "app_2"},
		{http.MethodGet, startPath, ""},
		{http.MethodDelete, startPath, ""},
		{http.MethodPost, "/v2/organisations/orga_1/applications/app_1", ""},
		{http.MethodPost, "/instances", ""},
	} {
		r := httptest.NewRequest(tt.method, tt.path, nil)
		if got := startCallApp(r); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestKillPhase(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sent := proxiedStart{arrived: at(0)}                                           // cut before it landed
	landed := proxiedStart{arrived: at(0), landed: at(50), status: 200}            // its answer lost
	done := proxiedStart{arrived: at(0), landed: at(50), delivered: at(100)}       // answered
	next := proxiedStart{arrived: at(2000), landed: at(2050), delivered: at(2100)} // the next leader's
	for _, tt := range []struct {
		name   string
		starts []proxiedStart
		killMS int
		want   string
	}{
		{"no start call at all", nil, 10, phaseBefore},
		{"only the next leader's", []proxiedStart{next}, 10, phaseBefore},
		{"the kill just before the call came", []proxiedStart{done}, 0, phaseBefore},
		{"while it was sent", []proxiedStart{sent, next}, 20, phaseSending},
		{"while it was sent, though it landed later", []proxiedStart{done}, 30, phaseSending},
		{"landed, its answer on its way", []proxiedStart{landed, next}, 80, phaseLanded},
		{"landed, the kill before the answer", []proxiedStart{done}, 99, phaseLanded},
		{"after its answer", []proxiedStart{done}, 101, phaseAfter},
		{"a cut call, then an answered one", []proxiedStart{sent, {arrived: at(1100), landed: at(1150), delivered: at(1200)}}, 1300, phaseAfter},
	} {
		if got := killPhase(tt.starts, at(tt.killMS)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

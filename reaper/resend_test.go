package reaper

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/plugin"
)

func TestResendAfterWake(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	lost := func(attempt int) plugin.SendFailure { return plugin.SendFailure{Err: io.EOF, Attempt: attempt} }
	for _, tc := range []struct {
		name     string
		method   string
		f        plugin.SendFailure
		woke     bool
		deadline time.Time
		wait     time.Duration
		ok       bool
	}{
		{"GET, connection closed: sent again", "GET", lost(1), true, later, 50 * time.Millisecond, true},
		{"HEAD, reset: sent again", "HEAD", lost(1), true, later, 50 * time.Millisecond, true},
		{"the back-off doubles", "GET", lost(3), true, later, 200 * time.Millisecond, true},
		{"up to a second", "GET", lost(6), true, later, time.Second, true},
		{"and stays there", "GET", lost(600), true, later, time.Second, true},
		{"POST whose body was sent: never", "POST", lost(1), true, later, 0, false},
		{"DELETE: never", "DELETE", lost(1), true, later, 0, false},
		{"POST whose body was not sent: sent again", "POST", plugin.SendFailure{Err: io.EOF, Attempt: 1, BodyUnsent: true}, true, later, 50 * time.Millisecond, true},
		{"POST refused: sent again", "POST", plugin.SendFailure{Err: io.EOF, Attempt: 2, NeverSent: true}, true, later, 100 * time.Millisecond, true},
		{"the app answered since its wake: never", "GET", lost(1), false, later, 0, false},
		{"the next attempt would be past the fail timeout: no", "GET", lost(1), true, now.Add(50 * time.Millisecond), 0, false},
		{"just before the fail timeout: yes", "GET", lost(1), true, now.Add(51 * time.Millisecond), 50 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, ok := resendAfterWake(tc.method, tc.f, tc.woke, now, tc.deadline)
			if wait != tc.wait || ok != tc.ok {
				t.Errorf("resendAfterWake = %v, %v; want %v, %v", wait, ok, tc.wait, tc.ok)
			}
		})
	}
}

// wakingApp is an app behind a real listener that drops its first connections as
// an app that has just woken may (its engine's port proxy accepting before it
// listens): closed after the request was read ("close"), reset after it was read
// ("reset"), or reset after the request's head was read, without the 100 Continue
// its client waits for ("reset-head"). Later connections are served by the rig.
type wakingApp struct {
	net.Listener
	mode  string
	drop  int64 // connections to drop
	conns atomic.Int64
}

func (w *wakingApp) Accept() (net.Conn, error) {
	for {
		c, err := w.Listener.Accept()
		if err != nil || w.conns.Add(1) > w.drop {
			return c, err
		}
		go w.dropConn(c)
	}
}

func (w *wakingApp) dropConn(c net.Conn) {
	defer c.Close()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	if w.mode != "reset-head" {
		io.Copy(io.Discard, req.Body)
	}
	if w.mode != "close" {
		c.(*net.TCPConn).SetLinger(0) // close with a reset
	}
}

// resends counts the released requests sent again (ResendObserver).
type resends struct {
	noObserver
	n atomic.Int64
}

func (r *resends) HeldResent(string) { r.n.Add(1) }

// A request released right after a wake whose connection the app drops before it
// answers is sent again until the app serves it, when sending it again is safe:
// a GET or a HEAD, or a request whose body the app has not begun to receive. A
// POST whose body was sent is never sent again beyond the gateway's one resend
// of a body in memory.
func TestWake_ARequestReleasedRightAfterAWakeIsSentAgainWhenItsConnectionIsDropped(t *testing.T) {
	big := strings.Repeat("b", 100<<10) // not held in memory: its client waits for a 100 Continue
	for _, tc := range []struct {
		name       string
		method     string
		body       string
		expect     bool // Expect: 100-continue
		mode       string
		drop       int64
		wantStatus int
		wantConns  int64 // connections the app accepted
		wantSent   int64 // resends counted
	}{
		{"GET, connections closed", "GET", "", false, "close", 3, 200, 4, 3},
		{"GET, connections reset", "GET", "", false, "reset", 3, 200, 4, 3},
		{"HEAD, connections reset", "HEAD", "", false, "reset", 2, 200, 3, 2},
		{"POST whose body was not sent yet", "POST", big, true, "reset-head", 2, 200, 3, 2},
		// Its body is held in memory: the gateway's one resend on a new
		// connection, then the 502.
		{"POST whose body was sent", "POST", "amount=100EUR", false, "reset", 3, 502, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			app := &wakingApp{Listener: ln, mode: tc.mode, drop: tc.drop}
			rig := &holdRig{}
			obs := &resends{}
			rig.observer = obs
			srv := &http.Server{Handler: rig}
			go srv.Serve(app)
			t.Cleanup(func() { srv.Close() })
			rig.start(t, true, "{app_id: app, ready_delay: 0}", "http://"+ln.Addr().String())

			res := rig.sendWhileWaking(t, tc.method, tc.body, tc.expect)
			if res.status != tc.wantStatus {
				t.Errorf("status %d (%.80q), want %d", res.status, res.body, tc.wantStatus)
			}
			if n := app.conns.Load(); n != tc.wantConns {
				t.Errorf("the app accepted %d connections, want %d", n, tc.wantConns)
			}
			if n := obs.n.Load(); n != tc.wantSent {
				t.Errorf("%d resends counted, want %d", n, tc.wantSent)
			}
			got := rig.received()
			if tc.wantStatus != 200 {
				if len(got) != 0 {
					t.Errorf("the app served %q", got)
				}
				return
			}
			if want := tc.method + " /x " + tc.body; len(got) != 1 || got[0] != want {
				t.Errorf("the app served %.80q, want once %.80q", got, want)
			}
			if tc.method != "HEAD" && res.body != "from the app: "+tc.body {
				t.Errorf("the answer's body is %.80q", res.body)
			}
		})
	}
}

// A request released to an app that refuses its connections for a while after
// its wake is sent again until the app listens.
func TestWake_ARequestReleasedToAnAppNotListeningYetWaitsForIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused until it listens again
	rig := &holdRig{}
	obs := &resends{}
	rig.observer = obs
	rig.start(t, true, "{app_id: app, ready_delay: 0}", "http://"+addr)
	done := make(chan sent, 1)
	go func() { done <- rig.sendWhileWaking(t, "GET", "", false) }()
	testwait.For(t, 10*time.Second, "the request sent again twice", func() bool { return obs.n.Load() >= 2 })
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rig}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	if res := <-done; res.status != 200 || res.body != "from the app: " {
		t.Errorf("got %d %.80q, want the app's answer", res.status, res.body)
	}
	if got := rig.received(); len(got) != 1 {
		t.Errorf("the app served %q, want the request once", got)
	}
}

// Sent again no longer than the route's fail_timeout: an app that keeps dropping
// connections gets its 502 then.
func TestWake_ARequestIsSentAgainNoLongerThanTheFailTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &wakingApp{Listener: ln, mode: "reset", drop: 1 << 40}
	go http.Serve(app, nil) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { ln.Close() })
	rig := &holdRig{}
	obs := &resends{}
	rig.observer = obs
	rig.start(t, true, "{app_id: app, ready_delay: 0, fail_timeout: 2s}", "http://"+ln.Addr().String())
	res := rig.sendWhileWaking(t, "GET", "", false)
	if res.status != 502 {
		t.Errorf("got %d %.80q, want 502", res.status, res.body)
	}
	if obs.n.Load() == 0 {
		t.Errorf("never sent again")
	}
}

// sent is what a client got.
type sent struct {
	status int
	body   string
}

// sendWhileWaking sends a request to the sleeping app, which wakes it; the
// platform reports the app up once the request is held, and the request is
// released to it.
func (rig *holdRig) sendWhileWaking(t *testing.T, method, body string, expect bool) sent {
	t.Helper()
	go func() {
		testwait.For(t, 5*time.Second, "the start asked", func() bool { return rig.fake.Count("start", "app") == 1 })
		rig.fake.FinishStart("app")
	}()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, _ := http.NewRequest(method, rig.front.URL+"/x", rd)
	req.Header.Set("Accept", "application/json")
	if expect {
		req.Header.Set("Expect", "100-continue")
	}
	tr := &http.Transport{ExpectContinueTimeout: 20 * time.Second}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return sent{res.StatusCode, string(b)}
}

// A client that leaves while its request waits to be sent again ends it: nothing
// more is sent for it.
func TestWake_AClientThatLeavesEndsTheResends(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &wakingApp{Listener: ln, mode: "reset", drop: 1 << 40}
	go http.Serve(app, nil) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { ln.Close() })
	rig := &holdRig{}
	obs := &resends{}
	rig.observer = obs
	rig.start(t, true, "{app_id: app, ready_delay: 0}", "http://"+ln.Addr().String()) // fail_timeout: 15 min
	go func() {
		testwait.For(t, 5*time.Second, "the start asked", func() bool { return rig.fake.Count("start", "app") == 1 })
		rig.fake.FinishStart("app")
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", rig.front.URL+"/x", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	testwait.For(t, 10*time.Second, "the request sent again", func() bool { return obs.n.Load() >= 2 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the client got an answer")
	}
	// Its fail timeout is 15 minutes away: it ends with its client.
	testwait.For(t, 5*time.Second, "the request ended on the gateway", func() bool { return rig.app.inFlight.Load() == 0 })
}

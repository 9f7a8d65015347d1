package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestProber_TCP(t *testing.T) {
	p := New(nil)
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if !p.Ready(context.Background(), &Config{TCP: addr}) {
		t.Error("a listening port is not ready")
	}
	_ = ln.Close()
	if p.Ready(context.Background(), &Config{TCP: addr}) {
		t.Error("a closed port is ready")
	}
}

func TestProber_HTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			// To a failing page: a redirect is an answer, and is not followed.
			http.Redirect(w, r, "/500", http.StatusFound)
			return
		}
		code, _ := strconv.Atoi(r.URL.Path[1:])
		w.WriteHeader(code)
	}))
	defer srv.Close()
	p := New(nil)
	defer p.Close()
	for path, want := range map[string]bool{
		"/200": true, "/204": true, "/404": true, "/499": true, "/redirect": true,
		"/500": false, "/502": false, "/503": false,
	} {
		if got := p.Ready(context.Background(), &Config{HTTP: srv.URL + path}); got != want {
			t.Errorf("GET %s: ready = %v, want %v", path, got, want)
		}
	}
	srv.Close()
	if p.Ready(context.Background(), &Config{HTTP: srv.URL + "/200"}) {
		t.Error("a closed server is ready")
	}
}

func TestProber_EndsWithContext(t *testing.T) {
	// A server that accepts but never answers: only the context ends the probe.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	p := New(nil)
	defer p.Close()
	go func() { done <- p.Ready(ctx, &Config{HTTP: "http://" + ln.Addr().String() + "/"}) }()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cancel()
	if <-done {
		t.Error("a probe that got no answer is ready")
	}
}

func TestProber_SaysWhetherTheAppAnswered(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Path[1:])
		w.WriteHeader(code)
	}))
	defer srv.Close()
	tcp := srv.Listener.Addr().String()
	p := New(nil)
	defer p.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		name         string
		tcp, httpURL string
		want         Result
	}{
		{"tcp, listening", tcp, "", Ready},
		{"http 200", "", srv.URL + "/200", Ready},
		{"http 503: the app answered", "", srv.URL + "/503", NotReady},
	} {
		if got := p.Probe(ctx, &Config{TCP: tt.tcp, HTTP: tt.httpURL}); got != tt.want {
			t.Errorf("%s: probe = %d, want %d", tt.name, got, tt.want)
		}
	}
	srv.Close()
	if got := p.Probe(ctx, &Config{TCP: tcp}); got != Unreached {
		t.Errorf("tcp, closed port: probe = %d, want Unreached", got)
	}
	if got := p.Probe(ctx, &Config{HTTP: srv.URL + "/200"}); got != Unreached {
		t.Errorf("http, closed port: probe = %d, want Unreached", got)
	}
}

func TestProbeInterval_Schedule(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		since, steady, want time.Duration
	}{
		// The fast start: 2 ms for the first second.
		{0, 25 * ms, 2 * ms},
		{-time.Second, 25 * ms, 2 * ms}, // a start in the future (a clock step): fast
		{500 * ms, 25 * ms, 2 * ms},
		{time.Second, 25 * ms, 2 * ms},
		// Then twice as long every second, up to the steady interval.
		{1500 * ms, 25 * ms, 2828427 * time.Nanosecond}, // 2 ms × √2
		{2 * time.Second, 25 * ms, 4 * ms},
		{3 * time.Second, 25 * ms, 8 * ms},
		{4 * time.Second, 25 * ms, 16 * ms},
		{4500 * ms, 25 * ms, 22627416 * time.Nanosecond}, // 16 ms × √2
		{5 * time.Second, 25 * ms, 25 * ms},
		{60 * time.Second, 25 * ms, 25 * ms},
		{100 * 24 * time.Hour, 25 * ms, 25 * ms}, // 2^(8.6 million): no overflow
		// A longer steady interval is reached later.
		{9 * time.Second, time.Second, 512 * ms},
		{10 * time.Second, time.Second, time.Second}, // 1,024 ms: capped
		{time.Hour, time.Second, time.Second},
		// The shortest steady interval allowed.
		{0, MinInterval, 2 * ms},
		{2 * time.Second, MinInterval, 4 * ms},
		{3 * time.Second, MinInterval, MinInterval},
		// Never slower than the steady interval, even while fast.
		{0, ms, ms},
	} {
		if got := Interval(tt.since, tt.steady); got != tt.want {
			t.Errorf("Interval(%s, %s) = %s, want %s", tt.since, tt.steady, got, tt.want)
		}
	}
}

func TestProbeInterval_GrowsUpToTheSteadyInterval(t *testing.T) {
	for _, steady := range []time.Duration{MinInterval, DefaultInterval, time.Second, time.Minute} {
		prev := time.Duration(0)
		for since := time.Duration(0); since <= 30*time.Second; since += time.Millisecond {
			iv := Interval(since, steady)
			if iv < prev || iv > steady || iv < fastProbeInterval {
				t.Fatalf("steady %s: Interval(%s) = %s after %s", steady, since, iv, prev)
			}
			prev = iv
		}
	}
}

// fakeApp is a probed app whose port opens at openAt after the loop starts, and
// which answers probes without being ready before readyAt (HTTP 5xx), when set.
type fakeApp struct {
	start           time.Time
	openAt, readyAt time.Duration
	starting        bool            // between them, it answers Starting (57P03) rather than a 503
	probes          []time.Duration // time since start of each probe
}

func (f *fakeApp) probe(context.Context) Result {
	since := time.Since(f.start)
	f.probes = append(f.probes, since)
	switch {
	case since < f.openAt:
		return Unreached
	case since < f.readyAt && f.starting:
		return Starting
	case since < f.readyAt:
		return NotReady
	}
	return Ready
}

// runLoop runs probeLoop on f, in the test's bubble, until it returns or until
// stopAfter; it returns the loop's result and when it returned.
func runLoop(f *fakeApp, steady, stopAfter time.Duration) (bool, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), stopAfter)
	defer cancel()
	f.start = time.Now()
	ok := Loop(ctx, f.start, steady, nil, f.probe)
	return ok, time.Since(f.start)
}

func TestProbeLoop_FollowsTheScheduleFor60s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeApp{openAt: time.Hour}
		ok, _ := runLoop(f, DefaultInterval, time.Minute)
		if ok {
			t.Fatal("an app that never opened its port is ready")
		}
		if f.probes[0] != 0 {
			t.Errorf("first probe %s after the start, want at once", f.probes[0])
		}
		for i := 1; i < len(f.probes); i++ {
			prev := f.probes[i-1]
			if gap, want := f.probes[i]-prev, Interval(prev, DefaultInterval); gap != want {
				t.Fatalf("probe %d at %s: %s after the previous one, want %s", i, f.probes[i], gap, want)
			}
		}
		// The cost the schedule's comment states: about 3,400 probes for an app
		// that takes 60 s to open its port (2,400 at a fixed 25 ms).
		n, first := len(f.probes), 0
		for _, p := range f.probes {
			if p < time.Second {
				first++
			}
		}
		t.Logf("%d probes in 60 s, %d in the first second", n, first)
		if n < 3300 || n > 3450 || first != 500 {
			t.Errorf("%d probes in 60 s, %d in the first second; want about 3,400 and 500", n, first)
		}
		if got := f.probes[len(f.probes)-1]; got > time.Minute {
			t.Errorf("a probe at %s, after the context ended", got)
		}
	})
}

func TestProbeLoop_ReadySoonAfterThePortOpens(t *testing.T) {
	for _, open := range []time.Duration{
		300*time.Millisecond + 500*time.Microsecond, 999 * time.Millisecond,
		2500 * time.Millisecond, 4 * time.Second, 30 * time.Second,
	} {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeApp{openAt: open}
			ok, at := runLoop(f, DefaultInterval, time.Hour)
			// The probe that finds it open follows the one before by the
			// schedule's interval at that time: never later than that after
			// the opening.
			if late, bound := at-open, Interval(open, DefaultInterval); !ok || late < 0 || late > bound {
				t.Errorf("port open at %s: ready %v, %s after it, want within %s", open, ok, late, bound)
			}
		})
	}
}

func TestProbeLoop_AnAppThatAnswersIsProbedAtTheSteadyInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The port opens at 100 ms; the app answers 503 until 300 ms.
		f := &fakeApp{openAt: 100 * time.Millisecond, readyAt: 300 * time.Millisecond}
		ok, at := runLoop(f, DefaultInterval, time.Hour)
		if !ok || at < f.readyAt || at > f.readyAt+DefaultInterval {
			t.Fatalf("ready %v at %s, want within %s of %s", ok, at, DefaultInterval, f.readyAt)
		}
		answered := 0
		for i, p := range f.probes {
			if p < f.openAt || i == len(f.probes)-1 {
				continue
			}
			answered++
			if gap := f.probes[i+1] - p; gap != DefaultInterval {
				t.Errorf("probe at %s answered 503, next one %s later, want %s", p, gap, DefaultInterval)
			}
		}
		if answered != 8 { // 100 ms to 300 ms at 25 ms
			t.Errorf("the app answered %d probes before it was ready, want 8", answered)
		}
	})
}

func TestProbeLoop_AnAppThatSaysItIsStartingKeepsTheFastSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Postgres opens its port at 100 ms and answers 57P03 until 130 ms: it is
		// found ready within the fast schedule's 2 ms, not the steady 25 ms.
		f := &fakeApp{openAt: 100 * time.Millisecond, readyAt: 130 * time.Millisecond, starting: true}
		ok, at := runLoop(f, DefaultInterval, time.Hour)
		if !ok || at < f.readyAt || at > f.readyAt+fastProbeInterval {
			t.Fatalf("ready %v at %s, want within %s of %s", ok, at, fastProbeInterval, f.readyAt)
		}
	})
}

func TestProbeLoop_EndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeApp{openAt: time.Hour}
		ok, at := runLoop(f, DefaultInterval, 50*time.Millisecond)
		if ok || at != 50*time.Millisecond {
			t.Errorf("ready %v, returned %s after the start; want false, as the context ended (50ms)", ok, at)
		}
		if last := f.probes[len(f.probes)-1]; last > 50*time.Millisecond {
			t.Errorf("probed at %s, after the context ended", last)
		}
	})
}

func TestProber_TCPTellsAClosedPortFromAnUnreachableAddress(t *testing.T) {
	p := New(nil)
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if res, err := p.TCP(context.Background(), addr); res != Ready || err != nil {
		t.Errorf("a listening port: %v, %v; want Ready", res, err)
	}
	_ = ln.Close()
	res, err := p.TCP(context.Background(), addr)
	if res != Unreached || !Refused(err) {
		t.Errorf("a closed port: %v, %v; want Unreached, refused", res, err)
	}
	// A context that ended is not a refusal: nothing says the host answered.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := p.TCP(ctx, addr); res != Unreached || err == nil || Refused(err) {
		t.Errorf("a probe whose context ended: %v, %v; want Unreached, not refused", res, err)
	}
}

// An app reaper no longer waits for (in Error) is not probed while its gate is
// paused, for however long; resumed, it is probed at once, on the schedule of a
// fresh start (every 2 ms in its first second).
func TestProbeLoop_APausedGateSendsNoProbeUntilResumed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int64
		gate := &Gate{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan bool, 1)
		started := time.Now()
		go func() {
			done <- Loop(ctx, started, DefaultInterval, gate, func(context.Context) Result {
				probes.Add(1)
				return Unreached
			})
		}()
		time.Sleep(10 * time.Second) // simulated time: the bubble's clock
		synctest.Wait()
		before := probes.Load()
		if before < 300 { // 500 in the first second, then ~40 a second
			t.Fatalf("%d probes in 10 s before the pause, want the start's schedule", before)
		}
		gate.Pause()
		gate.Pause() // repeated: still paused
		if !gate.Paused() {
			t.Fatal("Paused() = false after Pause")
		}
		time.Sleep(25 * time.Minute)
		synctest.Wait()
		// The probe that was due when the gate closed may not be sent either:
		// the loop's wait ends on the pause.
		if during := probes.Load() - before; during != 0 {
			t.Errorf("%d probes in 25 minutes while paused, want 0", during)
		}
		gate.Resume()
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		// A fresh start's first second: a probe every 2 ms, from the resume.
		if after := probes.Load() - before; after != 500 {
			t.Errorf("%d probes in the first second after the resume, want 500 (every 2 ms)", after)
		}
		cancel()
		if <-done {
			t.Error("Loop said ready for an app that never answered")
		}
	})
}

// A nil gate never pauses.
func TestGate_NilIsOpen(t *testing.T) {
	var g *Gate
	if g.Paused() || g.paused() != nil || g.pausedCh() != nil {
		t.Error("a nil gate is paused")
	}
}

package reaper

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas/paastest"
)

func TestBootRing_MedianOfTheLastBoots(t *testing.T) {
	var b bootRing
	if d, n := b.median(); d != 0 || n != 0 {
		t.Fatalf("empty: %v, %d", d, n)
	}
	for i, s := range []int{5, 1, 3} {
		b.add(dtNow.Add(time.Duration(i)*time.Hour), time.Duration(s)*time.Second)
	}
	b.add(dtNow.Add(2*time.Hour), time.Hour) // the same wake again: ignored
	if d, n := b.median(); d != 3*time.Second || n != 3 {
		t.Fatalf("median of 5, 1, 3 s = %v over %d; want 3s over 3", d, n)
	}
	for i := range 20 { // only the last bootSamples count
		b.add(dtNow.Add(time.Duration(10+i)*time.Hour), 10*time.Second)
	}
	if d, n := b.median(); d != 10*time.Second || n != bootSamples {
		t.Fatalf("after 20 boots of 10 s: %v over %d", d, n)
	}
	b.add(dtNow.Add(100*time.Hour), 0) // not a boot
	if _, n := b.median(); n != bootSamples {
		t.Fatal("a zero boot was counted")
	}
}

func TestServerTiming(t *testing.T) {
	w := &WakeTimes{AskedAt: dtNow, AcceptedAt: dtNow.Add(120 * time.Millisecond), UpAt: dtNow.Add(2 * time.Second)}
	got := serverTiming(&Record{Wake: w}, dtNow.Add(2100*time.Millisecond))
	want := `reaper-wake;dur=2100.0;desc="cold start", reaper-start;dur=120.0, reaper-boot;dur=1880.0, reaper-ready;dur=100.0`
	if got != want {
		t.Fatalf("Server-Timing\n got %s\nwant %s", got, want)
	}
	if serverTiming(&Record{}, dtNow) != "" || serverTiming(nil, dtNow) != "" {
		t.Fatal("no wake, yet a Server-Timing")
	}
}

// After a few measured boots, an API caller of a waking app is told when to
// come back by the app's own boots, not the reference's fixed 30 s; a node
// that restarts learns them again from the history.
func TestETA_LearnedFromBootsAndTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("api")
		fake.Manual = true
		e := newEnv(t, fake, "")
		p := e.route(config("api", func(c *Config) { c.APIBehavior = BehaviorUnavailable }))
		e.start()
		defer e.stop()
		settle()
		r := do(context.Background(), p, apiRequest("GET", "/"), false)
		if r.status() != 503 || r.answer.Header.Get("Retry-After") != "30" || r.answer.Header.Get(HeaderETA) != "" {
			t.Fatalf("first wake, no boot known: %d, Retry-After %q, ETA %q", r.status(), r.answer.Header.Get("Retry-After"), r.answer.Header.Get(HeaderETA))
		}
		settle()
		time.Sleep(12 * time.Second) // the app boots in 12 s
		fake.FinishStart("api")
		time.Sleep(6 * time.Second) // the job's next look sees it up
		settle()
		if eta, n := e.engine.ETA("api"); n != 1 || eta < 12*time.Second || eta > 20*time.Second {
			t.Fatalf("ETA after one boot: %v over %d; want the boot's 12 to 20 s", eta, n)
		}
		// Asleep again (stopped from outside), then woken: the answer says when.
		fake.Set("api", paastest.App{State: "SHOULD_BE_DOWN"})
		time.Sleep(6 * time.Second)
		settle()
		r = do(context.Background(), p, apiRequest("GET", "/"), false)
		settle()
		ra, _ := strconv.Atoi(r.answer.Header.Get("Retry-After"))
		if r.status() != 503 || ra < 10 || ra > 20 || r.answer.Header.Get(HeaderETA) != r.answer.Header.Get("Retry-After") || r.json(t)["eta_seconds"] == nil {
			t.Fatalf("second wake: %d, Retry-After %q, ETA %q, body %s; want the learned boot time", r.status(),
				r.answer.Header.Get("Retry-After"), r.answer.Header.Get(HeaderETA), r.answer.Body)
		}

		// A new engine on the same store (a restarted node) learns it from the history.
		fresh := NewEngine(EngineOptions{Node: "n2", Store: e.store})
		fresh.Register("route-api", "api", &p.Config, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go fresh.Run(ctx)
		settle()
		if eta, n := fresh.ETA("api"); n != 1 || eta < 12*time.Second {
			t.Errorf("a restarted node's ETA: %v over %d; want the boot from the history", eta, n)
		}
		cancel()
		settle()
	})
}

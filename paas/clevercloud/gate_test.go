package clevercloud

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestGate_RetryAfterThenOneProbeAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gate{base: time.Second, max: time.Minute}
		ctx := context.Background()
		rel, err := g.enter(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rel(limited, 5*time.Second)
		closed := g.closedFor()
		if closed < 5*time.Second || closed > 5500*time.Millisecond {
			t.Fatalf("closed for %v, want Retry-After 5s plus at most 10%%", closed)
		}

		// A budget shorter than the wait: refused at once, saying how long.
		start := time.Now()
		_, err = g.enter(ctx, time.Second)
		var rl *paas.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != closed || time.Since(start) != 0 {
			t.Fatalf("short budget: %v after %v", err, time.Since(start))
		}

		// A longer budget waits for the gate, then goes alone as the probe.
		probe, err := g.enter(ctx, 10*time.Second)
		if err != nil || time.Since(start) != closed {
			t.Fatalf("probe: %v after %v", err, time.Since(start))
		}
		var passed atomic.Int32
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				rel, err := g.enter(ctx, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				passed.Add(1)
				rel(answered, 0)
			})
		}
		synctest.Wait()
		if passed.Load() != 0 {
			t.Fatalf("%d calls passed while the probe was in flight", passed.Load())
		}
		probe(answered, 0) // the API answered: the storm is over
		wg.Wait()
		if passed.Load() != 5 || g.strikes != 0 {
			t.Errorf("passed %d, strikes %d", passed.Load(), g.strikes)
		}
	})
}

func TestGate_BackoffGrowsAndOneBurstIsOneStrike(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gate{base: time.Second, max: 8 * time.Second}
		ctx := context.Background()
		// Three calls in flight when the storm starts: one strike, not three.
		var rels []func(outcome, time.Duration)
		for range 3 {
			rel, _ := g.enter(ctx, time.Hour)
			rels = append(rels, rel)
		}
		for _, rel := range rels {
			rel(limited, 0)
		}
		if g.strikes != 1 {
			t.Fatalf("strikes %d after one burst", g.strikes)
		}
		// Each failed probe doubles the wait (with jitter), up to max.
		for n := 2; n <= 6; n++ {
			before := time.Now()
			rel, err := g.enter(ctx, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			rel(limited, 0)
			if g.strikes != n {
				t.Fatalf("strikes %d, want %d", g.strikes, n)
			}
			waited := time.Since(before)
			full := min(time.Second<<(n-2), 8*time.Second)
			if waited < full/2 || waited > full {
				t.Errorf("probe %d waited %v, want between %v and %v", n, waited, full/2, full)
			}
		}
		// A probe that gets no answer (a timeout) neither clears nor adds a strike,
		// and lets the next caller probe.
		rel, _ := g.enter(ctx, time.Hour)
		rel(noAnswer, 0)
		if g.strikes != 6 || g.probing {
			t.Errorf("after no answer: strikes %d probing %v", g.strikes, g.probing)
		}
		// A waiter whose budget ends while the probe is out gets a rate limit.
		probe, _ := g.enter(ctx, time.Hour)
		_, err := g.enter(ctx, time.Second)
		if !errors.Is(err, paas.ErrRateLimited) {
			t.Errorf("waiter: %v", err)
		}
		probe(answered, 0)
	})
}

func TestGate_BackoffBounds(t *testing.T) {
	g := &gate{base: 100 * time.Millisecond, max: 3 * time.Second}
	for n := 1; n <= 40; n++ {
		full := g.max
		if n < 31 {
			full = min(g.base<<(n-1), g.max)
		}
		for range 50 {
			if d := g.backoff(n); d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, d, full/2, full)
			}
		}
	}
}

// During a rate-limit storm, many callers for different apps do not each hit the
// API: the gate lets one probe through per back-off step.
func TestGate_StormSlowsTheWholeDriver(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, func(_ *fakeclever.Fake, _ *Config, o *Options) {
		o.RateLimitBase, o.RateLimitMax, o.GateWait = 20*time.Millisecond, 100*time.Millisecond, 300*time.Millisecond
	})
	const n = 30
	// The storm's callers ask for apps; after it, other callers for other apps
	// (the gate is the driver's, not an app's): a storm call cancelled at the
	// deadline may still reach the fake after the storm, but never for those.
	var apps, later []paas.App
	for range n {
		apps = append(apps, paas.App{ID: e.f.AddApp(fakeclever.App{Owner: orga}).ID, Owner: orga})
		later = append(later, paas.App{ID: e.f.AddApp(fakeclever.App{Owner: orga}).ID, Owner: orga})
	}
	e.f.Inject("", fakeclever.Fault{Kind: fakeclever.FaultRateLimit403})
	if _, err := e.c.Observe(context.Background(), apps[0]); !errors.Is(err, paas.ErrRateLimited) {
		t.Fatalf("storm did not start: %v", err)
	}
	e.f.ResetCalls()

	// Every caller asks again and again, as hard as it can, for one second.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var asks, other atomic.Int64
	var wg sync.WaitGroup
	for _, app := range apps {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := e.c.Observe(ctx, app)
				asks.Add(1)
				if !errors.Is(err, paas.ErrRateLimited) && ctx.Err() == nil {
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	calls := len(e.f.Calls())
	t.Logf("%d calls from %d asks", calls, asks.Load())
	// Probes after each back-off of at least 10, 20, 40, then 50 ms: about 20 in
	// a second, whatever the number of callers.
	if calls > 25 || calls < 3 {
		t.Errorf("%d calls reached the API during the storm (from %d asks by %d callers)", calls, asks.Load(), n)
	}
	if other.Load() != 0 {
		t.Errorf("%d errors other than rate limits", other.Load())
	}

	// Once the storm ends, the next probe succeeds and everyone goes through.
	e.f.ClearFaults()
	e.f.ResetCalls()
	var failed atomic.Int64
	for _, app := range later {
		wg.Go(func() {
			if _, err := e.c.Observe(context.Background(), app); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	calls = 0
	for _, c := range e.f.Calls() {
		if slices.ContainsFunc(later, func(a paas.App) bool { return a.ID == c.App }) {
			calls++
		}
	}
	if failed.Load() != 0 || calls != n {
		t.Errorf("after the storm: %d failed, %d calls", failed.Load(), calls)
	}
}

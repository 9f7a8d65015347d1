package reaper

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas/paastest"
)

// replayResult is what a month of synthetic traffic found.
type replayResult struct {
	firstVisits, foundUp int           // first visits after a sleep, in the last two weeks; those that found the app up
	awake                time.Duration // time the app was up (or starting), over the whole month
	view                 PrewakeView   // the admin API's view at the end
}

// replayMonth runs four weeks of a team's traffic against one app: on weekdays
// someone opens it at about 09:05 (a few minutes either way), then uses it now
// and then until noon; a few visits at random times in the week. The app sleeps
// after 20 idle minutes.
func replayMonth(t *testing.T, prewake bool, seed uint64) replayResult {
	var res replayResult
	synctest.Test(t, func(t *testing.T) {
		store, err := NewMemStore(MemStoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fake := paastest.New("app")
		engine := NewEngine(EngineOptions{Node: "n1", Store: store, PollInterval: 10 * time.Minute, FlushInterval: time.Minute})
		job := NewJob(JobOptions{Engine: engine, Store: store, PaaS: fake, Logger: slog.New(slog.DiscardHandler),
			FastInterval: time.Minute, FullInterval: time.Minute})
		engine.SetAsker(job)
		cfg := config("app", func(c *Config) {
			c.GracePeriod = conf.Duration(20 * time.Minute)
			c.APIBehavior = BehaviorUnavailable
			c.Timezone = "UTC"
			if prewake {
				c.Prewake = PrewakeLearn
			}
		})
		e := &env{t: t, store: store, fake: fake, engine: engine, job: job}
		p := e.route(cfg)
		e.start()
		defer e.stop()

		rng := rand.New(rand.NewPCG(seed, 42))
		start := time.Now() // the bubble's clock: Saturday 2000-01-01 00:00 UTC
		var visits []time.Time
		for day := range 28 {
			d := start.AddDate(0, 0, day)
			if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
				first := d.Add(9*time.Hour + 5*time.Minute + time.Duration(rng.IntN(9)-4)*time.Minute)
				for v := first; v.Before(d.Add(12 * time.Hour)); v = v.Add(time.Duration(5+rng.IntN(10)) * time.Minute) {
					visits = append(visits, v)
				}
			}
			if rng.IntN(4) == 0 { // now and then, someone at any hour
				visits = append(visits, d.Add(time.Duration(rng.IntN(24*60))*time.Minute))
			}
		}
		slices.SortFunc(visits, time.Time.Compare)
		var upSince time.Time
		lastStatus := StatusDown
		account := func() { // awake time: from leaving Down to going back to Down
			st := engine.app("app").status()
			switch {
			case st != StatusDown && lastStatus == StatusDown:
				upSince = time.Now()
			case st == StatusDown && lastStatus != StatusDown && !upSince.IsZero():
				res.awake += time.Since(upSince)
			}
			lastStatus = st
		}
		lastVisit := time.Time{}
		for _, v := range visits {
			for time.Now().Before(v) { // walk to the visit a minute at a time, watching the status
				time.Sleep(min(time.Minute, time.Until(v)))
				synctest.Wait()
				account()
			}
			up := engine.app("app").status() == StatusUp
			r := do(context.Background(), p, apiRequest("GET", "/"), false)
			if (r.status() == 0) != up {
				t.Fatalf("at %s: status %s but the request got %d", v, engine.app("app").status(), r.status())
			}
			if v.Sub(start) >= 14*24*time.Hour && (lastVisit.IsZero() || v.Sub(lastVisit) > 20*time.Minute) {
				res.firstVisits++
				if up {
					res.foundUp++
				}
			}
			lastVisit = v
			synctest.Wait()
			account()
		}
		if lastStatus != StatusDown {
			res.awake += time.Since(upSince)
		}
		h := (&AdminAPI{Engine: engine, Store: store}).Handler()
		code, body, _ := call(t, h, "GET", "/api/apps/app/prewake", "")
		if code != 200 {
			t.Fatalf("prewake view: %d %v", code, body)
		}
		items, _, _ := store.History(context.Background(), "app", 0, HistoryCap)
		res.view = prewakeViewOf("app", engine.Managed()[0].Policy, items, 0, time.Now())
	})
	return res
}

// A synthetic month of a team's traffic, replayed with and without learned
// pre-wake: in the last two weeks, most first visits of the day find the app up
// with it, none without; the awake time it costs is bounded by a grace period
// per pre-wake.
func TestPrewake_ReplayAMonth(t *testing.T) {
	if testing.Short() {
		t.Skip("a month of simulated time")
	}
	without := replayMonth(t, false, 7)
	with := replayMonth(t, true, 7)
	share := func(r replayResult) float64 { return float64(r.foundUp) / float64(max(r.firstVisits, 1)) }
	t.Logf("first visits after a sleep, weeks 3-4: %d; found the app up: %.0f%% with pre-wake, %.0f%% without",
		with.firstVisits, 100*share(with), 100*share(without))
	t.Logf("awake hours over the month: %.1f with pre-wake, %.1f without (+%.1f)",
		with.awake.Hours(), without.awake.Hours(), with.awake.Hours()-without.awake.Hours())
	v := with.view
	t.Logf("the API's view: %d slots, next arrival %v, %d hits, %d misses", len(v.Slots), v.NextArrival, v.Hits, v.Misses)
	if !v.Enabled || len(v.Slots) != 5 || v.Slots[0].At != "09:0"+v.Slots[0].At[4:] || v.Hits < 8 || v.HitRate == nil || v.NextArrival == nil {
		t.Errorf("the API's view after the month: %+v; want five working-day slots near 09:05, the hits counted, a next arrival", v)
	}
	if without.view.Enabled || without.view.Hits != 0 || len(without.view.Slots) != 5 {
		t.Errorf("without pre-wake, the view says %+v; want it off, no hits, but the visits it would predict", without.view)
	}
	if share(without) != 0 {
		t.Errorf("without pre-wake %.0f%% of first visits found the app up; want none (it sleeps between visits)", 100*share(without))
	}
	if share(with) < 0.6 {
		t.Errorf("with pre-wake only %.0f%% of first visits found the app up; want most of the team's mornings", 100*share(with))
	}
	// At most one grace period (plus the lead time) per weekday pre-wake.
	if extra := with.awake - without.awake; extra > 20*(20+10)*time.Minute {
		t.Errorf("pre-wake cost %v of awake time; want at most a grace period and the lead per pre-wake", extra)
	}
}

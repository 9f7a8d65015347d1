package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// upApp returns a fake whose app runs.
func upApp(ids ...string) *paastest.Fake {
	f := paastest.New()
	for _, id := range ids {
		f.Set(id, paastest.App{State: paas.StateShouldBeUp})
	}
	return f
}

// waitStatus lets simulated time run until the app has the status, or fails after
// limit.
func waitStatus(t *testing.T, p *Plugin, want Status, limit time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	for p.route.a.status() != want {
		if time.Since(begin) > limit {
			t.Fatalf("status = %s after %v, want %s", p.route.a.status(), limit, want)
		}
		time.Sleep(time.Second)
	}
	return time.Since(begin)
}

func TestJob_SleepsAfterTheGracePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app"), "")
		p := e.route(config("app")) // grace 15m
		e.start()
		defer e.stop()
		settle()
		if st := p.route.a.status(); st != StatusUp {
			t.Fatalf("status = %s, want Up", st)
		}
		took := waitStatus(t, p, StatusDown, time.Hour)
		// A full grace period from when it was first seen up; the full pass runs
		// every 30 s.
		if took < 15*time.Minute || took > 15*time.Minute+31*time.Second {
			t.Errorf("stopped after %v, want 15m (+ one pass)", took)
		}
		if e.fake.Count("stop", "app") != 1 || e.fake.Get("app").State != paas.StateShouldBeDown {
			t.Errorf("stops = %d", e.fake.Count("stop", "app"))
		}
		if !strings.Contains(e.logs.String(), "app put to sleep") {
			t.Errorf("no log line for the stop")
		}
	})
}

func TestJob_InFlightRequestKeepsTheAppAwake_IdleClockStartsAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app"), "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		// A download that lasts two hours.
		r := do(context.Background(), p, apiRequest("GET", "/big"), true)
		if r.answer != nil {
			t.Fatalf("got %d", r.status())
		}
		time.Sleep(2 * time.Hour)
		if st := p.route.a.status(); st != StatusUp || e.fake.Count("stop", "app") != 0 {
			t.Fatalf("stopped under an open request: %s", st)
		}
		r.ex.Finish()
		took := waitStatus(t, p, StatusDown, time.Hour)
		if took < 15*time.Minute {
			t.Errorf("stopped %v after the request ended, want the grace period from its end", took)
		}
	})
}

func TestJob_WokenAppGetsAFullGracePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		time.Sleep(20 * time.Minute) // long asleep
		if r := do(context.Background(), p, apiRequest("GET", "/"), false); r.answer != nil {
			t.Fatalf("got %d", r.status())
		}
		took := waitStatus(t, p, StatusDown, time.Hour)
		if took < 15*time.Minute {
			t.Errorf("put back to sleep %v after waking, want a full grace period", took)
		}
		if e.fake.Count("start", "app") != 1 {
			t.Errorf("starts = %d", e.fake.Count("start", "app"))
		}
	})
}

func TestJob_DryRunNeverStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app"), "")
		p := e.route(config("app"))
		if err := e.store.PutSettings(context.Background(), Settings{DryRun: true}); err != nil {
			t.Fatal(err)
		}
		e.start()
		defer e.stop()
		time.Sleep(time.Hour)
		if st := p.route.a.status(); st != StatusUp || e.fake.Count("stop", "app") != 0 {
			t.Fatalf("dry run stopped the app: %s", st)
		}
		if !strings.Contains(e.logs.String(), "would put an idle app to sleep") {
			t.Errorf("no dry-run log line")
		}
	})
}

func TestJob_AppsChangedFromOutside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app"), "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		time.Sleep(10 * time.Minute)
		// Stopped from the console: Down, and the next request wakes it.
		e.fake.Set("app", paastest.App{State: paas.StateShouldBeDown})
		settle()
		if st := p.route.a.status(); st != StatusDown {
			t.Fatalf("status = %s after a stop from outside, want Down", st)
		}
		if r := do(context.Background(), p, apiRequest("GET", "/"), false); r.answer != nil {
			t.Fatalf("got %d", r.status())
		}
		if e.fake.Count("start", "app") != 1 {
			t.Fatalf("not woken")
		}
		// Stopped again and then started from outside (a deploy): Up, and it sleeps
		// only after a full grace period from then.
		e.fake.Set("app", paastest.App{State: paas.StateShouldBeDown})
		settle()
		time.Sleep(30 * time.Minute)
		e.fake.Set("app", paastest.App{State: paas.StateShouldBeUp})
		settle()
		if st := p.route.a.status(); st != StatusUp {
			t.Fatalf("status = %s after a start from outside, want Up", st)
		}
		took := waitStatus(t, p, StatusDown, time.Hour)
		if took < 15*time.Minute {
			t.Errorf("an app started from outside slept after %v, want a full grace period", took)
		}
	})
}

func TestJob_FailedStartCallIsRetriedAndTheAskKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.FailNext("start", &paas.RateLimitError{})
		fake.FailNext("start", paas.ErrBusy)
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		begin := time.Now()
		if r := do(context.Background(), p, apiRequest("GET", "/"), false); r.answer != nil {
			t.Fatalf("got %d", r.status())
		}
		if n := fake.Count("start", "app"); n != 3 {
			t.Errorf("start calls = %d, want 3 (two refused, one accepted)", n)
		}
		// Retried at the fast ticks (5 s), not after a minute.
		if took := time.Since(begin); took > 11*time.Second {
			t.Errorf("woke after %v, want the retries at the fast tick", took)
		}
		asks, _ := e.store.WakeAsks(context.Background())
		if _, ok := asks["app"]; ok {
			t.Errorf("the ask is still stored after the app is up")
		}
	})
}

func TestJob_RestartKeepsEveryClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app"), path)
		p := e.route(config("app"))
		e.start()
		settle()
		time.Sleep(5 * time.Minute)
		do(context.Background(), p, apiRequest("GET", "/"), false) // last access at 5m
		time.Sleep(6 * time.Minute)
		e.stop() // reaper restarts at 11m
		fake := e.fake

		e2 := newEnv(t, fake, path)
		p2 := e2.route(config("app"))
		e2.start()
		defer e2.stop()
		took := waitStatus(t, p2, StatusDown, time.Hour)
		// Last access at 5m + 15m grace = 20m, that is 9 minutes after the restart,
		// not a full grace period from the restart.
		if took < 9*time.Minute || took > 9*time.Minute+31*time.Second {
			t.Errorf("slept %v after the restart, want 9m (+ one pass)", took)
		}
	})
}

// racyPlatform finishes the app's start between the job's two reads (state, then
// last deployment), as a slow or rate-limited API makes happen.
type racyPlatform struct {
	*paastest.Fake
	flip func()
}

func (r racyPlatform) LastDeployment(ctx context.Context, app paas.App) (*paas.Deployment, error) {
	if r.flip != nil {
		r.flip()
	}
	return r.Fake.LastDeployment(ctx, app)
}

func TestJob_StateReadBeforeAStartEndedNeverRestartsTheApp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		e := newEnv(t, fake, "")
		var once sync.Once
		racy := racyPlatform{Fake: fake}
		racy.flip = func() { once.Do(func() { fake.FinishStart("app") }) }
		e.job = NewJob(JobOptions{Engine: e.engine, Store: e.store, PaaS: racy, Logger: slog.New(slog.DiscardHandler),
			FastInterval: 5 * time.Second, FullInterval: 30 * time.Second})
		e.engine.SetAsker(e.job)
		p := e.route(config("app"))
		ctx := context.Background()
		now := time.Now()
		// The app is waking: our start was sent a second ago, the platform still
		// says SHOULD_BE_DOWN (its deployment has not begun), requests still ask.
		fake.Set("app", paastest.App{State: paas.StateShouldBeDown,
			Deployment: &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: now}})
		rec := Record{AppID: "app", Status: StatusWaitingForUp, ActionAt: now.Add(-time.Second), StartSentAt: now.Add(-time.Second), LastStatusUpdate: now}
		if err := e.store.PutRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
		e.store.AskWake(ctx, "app", now, time.Hour)
		e.start()
		defer e.stop()
		settle()
		if n := fake.Count("start", "app"); n != 0 {
			t.Errorf("start calls = %d: a start was sent to an app that had just come up (a restart)", n)
		}
		if st := p.route.a.status(); st != StatusUp {
			t.Errorf("status = %s, want Up", st)
		}
	})
}

// slowStop is a platform whose stops take a while.
type slowStop struct {
	*paastest.Fake
	took time.Duration
}

func (s slowStop) Stop(ctx context.Context, app paas.App) error {
	select {
	case <-time.After(s.took):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Fake.Stop(ctx, app)
}

func TestJob_LockIsKeptForALongStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := upApp("app")
		e := newEnv(t, fake, "")
		e.job = NewJob(JobOptions{Engine: e.engine, Store: e.store, PaaS: slowStop{Fake: fake, took: 20 * time.Second},
			Logger: slog.New(slog.DiscardHandler), LockTTL: 3 * time.Second})
		e.engine.SetAsker(e.job)
		p := e.route(config("app", func(c *Config) { c.GracePeriod = conf.Duration(time.Minute) }))
		e.start()
		defer e.stop()
		waitStatus(t, p, StatusWaitingForShutdown, 10*time.Minute)
		// The stop runs for 20 s, far past the 3 s TTL: nobody else may take the lock.
		for range 6 {
			time.Sleep(3 * time.Second)
			if l, err := e.store.Lock(context.Background(), "app", 0, time.Second); !errors.Is(err, ErrLocked) {
				if l != nil {
					l.Release(context.Background())
				}
				t.Fatalf("the lock was free during the step: %v", err)
			}
		}
		waitStatus(t, p, StatusDown, time.Minute)
		if fake.Count("stop", "app") != 1 {
			t.Errorf("stops = %d", fake.Count("stop", "app"))
		}
		if _, err := e.store.Lock(context.Background(), "app", 0, time.Second); err != nil {
			t.Errorf("the lock is still held after the step: %v", err)
		}
	})
}

// batchPlatform observes every app in one call, as the Clever Cloud driver does
// with /v2/summary, and counts the calls.
type batchPlatform struct {
	*paastest.Fake
	mu    sync.Mutex
	calls int
}

func (b *batchPlatform) ObserveAll(ctx context.Context, apps []paas.App) (map[paas.App]paas.Observation, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	out := map[paas.App]paas.Observation{}
	for _, a := range apps {
		if st := b.Fake.Get(a.ID); st.State != "" {
			out[a] = paas.Observation{State: st.State}
		}
	}
	return out, nil
}

func TestJob_500AppsCostOneObservationAPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ids []string
		for i := range 500 {
			ids = append(ids, fmt.Sprintf("app-%03d", i))
		}
		fake := upApp(ids...)
		platform := &batchPlatform{Fake: fake}
		e := newEnv(t, fake, "")
		e.job = NewJob(JobOptions{Engine: e.engine, Store: e.store, PaaS: platform, Logger: slog.New(slog.DiscardHandler),
			FastInterval: 5 * time.Second, FullInterval: 30 * time.Second})
		e.engine.SetAsker(e.job)
		for _, id := range ids {
			e.route(config(id))
		}
		e.start()
		defer e.stop()
		settle()
		time.Sleep(61 * time.Second) // the first pass and two full passes
		settle()
		platform.mu.Lock()
		batches := platform.calls
		platform.mu.Unlock()
		if batches != 3 {
			t.Errorf("batch observations = %d for three passes over 500 apps, want 3", batches)
		}
		if n := len(fake.Calls("observe")); n != 0 {
			t.Errorf("%d single observations: awake, busy-free apps within their grace period need none", n)
		}
		if n := len(fake.Calls("deployment")); n != 0 {
			t.Errorf("%d deployment reads, want none (no decision needed one)", n)
		}
	})
}

// TestJob_LeaderKilledMidWake plays what a newer leader finds when the one before
// it was killed (kill -9) in the middle of a wake: the dead leader wrote the
// WaitingForUp record of its start (term 5) and died holding the app's lock,
// before its start call went out. The newer leader (term 6) must take the lock
// over at once, resolve the uncertain start by asking the platform (no
// deployment, still stopped: start now), and wake the app within a second or two
// — not after the dead lock's 15 s, nor after the 60 s "start again" rule.
func TestJob_LeaderKilledMidWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app") // stopped: SHOULD_BE_DOWN, no deployment of ours
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		ctx := context.Background()
		killedAt := time.Now()
		dead := Record{AppID: "app", Status: StatusWaitingForUp, Cause: CauseWakeAsked, PlatformState: paas.StateShouldBeDown,
			LastStatusUpdate: killedAt, ActionAt: killedAt, StartSentAt: killedAt, RetryStart: true, Term: 5, Revision: 3}
		if err := e.store.PutRecord(ctx, dead); err != nil {
			t.Fatal(err)
		}
		if err := e.store.AskWake(ctx, "app", killedAt, 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Lock(ctx, "app", 5, 15*time.Second); err != nil {
			t.Fatal(err) // the dead leader's lock, never released
		}
		time.Sleep(900 * time.Millisecond) // the election: the newer leader begins
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); e.engine.Run(runCtx) }()
		go func() { defer wg.Done(); e.job.Run(runCtx, 6) }()
		defer func() { cancel(); wg.Wait() }()

		for fake.Count("start", "app") == 0 && time.Since(killedAt) < 2*time.Minute {
			time.Sleep(100 * time.Millisecond)
		}
		if n := fake.Count("start", "app"); n != 1 {
			t.Fatalf("start calls = %d, want 1", n)
		}
		if took := time.Since(killedAt); took > 2*time.Second {
			t.Errorf("the start went out %v after the kill, want within 2 s (the lock taken over, the uncertain start resolved)\n%s", took, e.logs.String())
		}
		waitStatus(t, p, StatusUp, time.Minute)
		rec, _, _ := e.store.Record(ctx, "app")
		if rec.Term != 6 || rec.RetryStart {
			t.Errorf("record term %d, RetryStart %v; want term 6, the start accepted", rec.Term, rec.RetryStart)
		}
	})
}

// recordsCounter is a store that counts the reads of every record.
type recordsCounter struct {
	Store
	reads atomic.Int64
}

func (s *recordsCounter) Records(ctx context.Context) ([]Record, error) {
	s.reads.Add(1)
	return s.Store.Records(ctx)
}

// TestJob_AskForAManagedAppReadsNoOtherRecord: an ask for an app a route manages
// (a wake ask, or the process driver saying the app is ready, which a held request
// waits for) is decided on that app's record alone; only an ask for an app no
// route manages looks it up among the stored records.
func TestJob_AskForAManagedAppReadsNoOtherRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app", "gone"), "")
		store := &recordsCounter{Store: e.store}
		e.job = NewJob(JobOptions{Engine: e.engine, Store: store, PaaS: e.fake, Logger: slog.New(slog.DiscardHandler),
			FastInterval: 5 * time.Second, FullInterval: 30 * time.Second})
		e.engine.SetAsker(e.job)
		p := e.route(config("app"))
		if err := e.store.PutRecord(context.Background(), Record{AppID: "gone", Status: StatusUp, Revision: 1}); err != nil {
			t.Fatal(err)
		}
		e.start()
		defer e.stop()
		settle()
		if store.reads.Load() != 1 {
			t.Fatalf("the first pass read every record %d times, want once", store.reads.Load())
		}
		for range 3 {
			_ = e.job.Ask(context.Background(), "app")
			settle()
		}
		if n := store.reads.Load() - 1; n != 0 {
			t.Errorf("three asks for a managed app read every record %d times, want none", n)
		}
		if p.route.a.status() != StatusUp {
			t.Errorf("status %s, want Up", p.route.a.status())
		}
		_ = e.job.Ask(context.Background(), "gone")
		settle()
		if n := store.reads.Load() - 1; n != 1 {
			t.Errorf("an ask for an app no route manages read every record %d times, want once", n)
		}
	})
}

package trigger

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
)

func redisDo(t *testing.T, s *redistest.Server, args ...string) string {
	t.Helper()
	out, err := s.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out
}

// An RPUSH on an empty list wakes the worker at the trigger's next look: the
// first look after the push finds the list non-empty (within one every, so
// at most one look that found nothing may have been under way meanwhile).
func TestRedisList_RPushWakesWithinOneEvery(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "pw"})
	c := Config{ID: "redis-queue", Wake: "worker", Every: conf.Duration(300 * time.Millisecond),
		RedisList: &RedisList{Redis{Addr: srv.Addr(), Key: "jobs", Password: "pw", DB: 3}}}
	rr := run(t, c)
	rr.awaitChecks(t, "redis-queue", ResultNone, 2) // polling an empty list
	rr.wakes.none(t, "an empty list")

	if _, err := srv.Do("EVAL", "redis.call('SELECT', 3); return redis.call('RPUSH', 'jobs', 'job-1')", "0"); err != nil {
		t.Fatal(err)
	}
	// Counted once the push is acknowledged: looks that ended while the push
	// was on its way (it can take several every on a loaded machine) may have
	// found nothing, and so may the one look under way when it landed.
	before := rr.counts.check("redis-queue", ResultNone)
	w := rr.wakes.next(t, 20*time.Second, "after an RPUSH")
	if w.id != "worker" || w.by != "trigger redis-queue" {
		t.Fatalf("woke %+v, want worker by \"trigger redis-queue\"", w)
	}
	if empty := rr.counts.check("redis-queue", ResultNone) - before; empty > 1 {
		t.Errorf("%d looks found the list empty after the push: the first look after it must find the job", empty)
	}
	testwait.For(t, 10*time.Second, "the fire in the view", func() bool { return rr.Views()[0].Fires == 1 })
	v := rr.Views()[0]
	if !v.Running || v.LastFire == nil || v.Fires != 1 || v.Failing {
		t.Errorf("view %+v: want running, one fire, not failing", v)
	}
	// While the app is up (the Waker asks nothing), the job left in the list
	// asks no more wakes.
	rr.wakes.setAsked(false)
	n := rr.counts.check("redis-queue", ResultWork)
	rr.awaitChecks(t, "redis-queue", ResultWork, n+2)
	if v := rr.Views()[0]; v.Fires != 1 {
		t.Errorf("%d fires while the app is up, want still 1", v.Fires)
	}
}

// A sorted set of due times wakes the worker lead before a member is due,
// and not before.
func TestRedisDue_WakesLeadEarly(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	now := time.Now()
	// Due in two hours: outside a lead of one hour.
	redisDo(t, srv, "ZADD", "cron", strconv.FormatInt(now.Add(2*time.Hour).Unix(), 10), "nightly")
	c := Config{ID: "scheduler", Wake: "sched", Every: conf.Duration(200 * time.Millisecond),
		RedisDue: &RedisDue{Redis: Redis{Addr: srv.Addr(), Key: "cron"}, Lead: conf.Duration(time.Hour)}}
	rr := run(t, c)
	rr.awaitChecks(t, "scheduler", ResultNone, 2)
	rr.wakes.none(t, "a member due in 2h with a lead of 1h")

	// Due in 50 minutes: within the lead, though not due yet.
	redisDo(t, srv, "ZADD", "cron", strconv.FormatInt(now.Add(50*time.Minute).Unix(), 10), "hourly")
	if w := rr.wakes.next(t, 20*time.Second, "a member due in 50 min, lead 1h"); w.id != "sched" || w.by != "trigger scheduler" {
		t.Fatalf("woke %+v", w)
	}
}

// A trigger whose redis is down logs it once, however many looks fail, counts
// every failure, shows it, and says once that it works again.
func TestRedisList_DownLogsOnceAndCountsFailures(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := Config{ID: "q", Wake: "worker", Every: conf.Duration(100 * time.Millisecond),
		RedisList: &RedisList{Redis{Addr: srv.Addr(), Key: "jobs"}}}
	rr := run(t, c)
	rr.awaitChecks(t, "q", ResultNone, 1)
	srv.Stop()
	rr.awaitChecks(t, "q", ResultError, 3) // 1 s, then 2 s of back-off between them
	if n := rr.logs.Lines("cannot look at its source", "trigger=q"); n != 1 {
		t.Errorf("%d lines about the failure after 3 failed looks, want 1:\n%s", n, rr.logs.String())
	}
	v := rr.Views()[0]
	if !v.Failing || v.Failures < 3 || v.LastErrorAt == nil || !strings.Contains(v.LastError, "redis at "+srv.Addr()) {
		t.Errorf("view %+v: want failing, 3 failures in a row, the error naming the server", v)
	}
	srv.Restart()
	// The line comes after the view is updated: wait for both.
	testwait.For(t, 30*time.Second, "the trigger working again, and saying so", func() bool {
		return !rr.Views()[0].Failing && rr.logs.Lines("looks at its source again", "trigger=q") >= 1
	})
	if rr.counts.check("q", ResultError) < 3 {
		t.Errorf("%d failed looks counted, want at least 3", rr.counts.check("q", ResultError))
	}
	if n := rr.logs.Lines("looks at its source again", "trigger=q"); n != 1 {
		t.Errorf("%d lines about the recovery, want 1", n)
	}
	if v := rr.Views()[0]; v.LastError == "" {
		t.Errorf("the last error is forgotten once it works: %+v", v)
	}
}

// A trigger's loop that ends (the leader's term) is no longer running nor
// failing here, and says so to the Observer.
func TestRunner_EndOfTermStopsAndClearsTheFailure(t *testing.T) {
	rr := &running{wakes: newWakes(), counts: newCounts()}
	rr.Runner = New(Options{Triggers: []Config{{ID: "q", Wake: "w", Every: conf.Duration(100 * time.Millisecond),
		HTTP: &HTTP{URL: "http://127.0.0.1:1/"}}}, Waker: rr.wakes, Observer: rr.counts})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rr.Run(ctx)
	}()
	rr.awaitChecks(t, "q", ResultError, 1)
	if v := rr.Views()[0]; !v.Running || !v.Failing {
		t.Fatalf("view %+v: want running and failing (nothing listens on port 1)", v)
	}
	cancel()
	<-done
	if v := rr.Views()[0]; v.Running || v.Failing || v.LastError == "" {
		t.Errorf("view after the term %+v: want neither running nor failing, the last error kept", v)
	}
	rr.counts.mu.Lock()
	stopped := rr.counts.fires["q/stopped"]
	rr.counts.mu.Unlock()
	if stopped != 1 {
		t.Errorf("the Observer was told of %d stops, want 1", stopped)
	}
}

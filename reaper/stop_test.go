package reaper

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// A leader that loses its leadership (ctx ends) during the settle delay has written
// WaitingForShutdown but never sent the stop. The next leader must not leave the
// app "stopping" (every request held) until the fail timeout.
func TestJob_AStopNeverSentIsDecidedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := upApp("app")
		e := newEnv(t, fake, "")
		mk := func() *Job {
			return NewJob(JobOptions{Engine: e.engine, Store: e.store, PaaS: fake, Logger: slog.New(slog.DiscardHandler),
				FastInterval: 5 * time.Second, FullInterval: 30 * time.Second, SettleDelay: 2500 * time.Millisecond})
		}
		first := mk()
		e.engine.SetAsker(first)
		p := e.route(config("app", func(c *Config) { c.GracePeriod = conf.Duration(time.Minute) }))

		bg, stopBg := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); e.engine.Run(bg) }()
		lead1, lose1 := context.WithCancel(bg)
		go func() { defer wg.Done(); first.Run(lead1, 1) }()
		defer func() { e.engine.Shutdown(); stopBg(); wg.Wait() }()

		waitStatus(t, p, StatusWaitingForShutdown, 10*time.Minute)
		lose1() // leadership lost during the settle delay: no stop is sent
		settle()
		if n := fake.Count("stop", "app"); n != 0 {
			t.Fatalf("stops = %d, want 0 (the step was abandoned)", n)
		}

		second := mk()
		e.engine.SetAsker(second)
		wg.Add(1)
		go func() { defer wg.Done(); second.Run(bg, 2) }()

		began := time.Now()
		r := do(context.Background(), p, apiRequest("GET", "/api"), false)
		took := time.Since(began)
		if r.answer != nil || took > time.Minute {
			t.Errorf("a request on an app that is up and never stopped: answer %v after %v; status %s, stops sent %d",
				r.status(), took, p.route.a.status(), fake.Count("stop", "app"))
		}
	})
}

// flakyExtendStore fails the first Extend of every lock with a transient error
// (a store timeout), as one slow Valkey round trip would.
type flakyExtendStore struct{ *MemStore }

func (s flakyExtendStore) Lock(ctx context.Context, app string, term uint64, ttl time.Duration) (Lock, error) {
	return flaky(s.MemStore.Lock(ctx, app, term, ttl))
}

// LockAs is how the job takes its locks.
func (s flakyExtendStore) LockAs(ctx context.Context, app string, term uint64, holder string, ttl time.Duration) (Lock, error) {
	return flaky(s.MemStore.LockAs(ctx, app, term, holder, ttl))
}

func flaky(l Lock, err error) (Lock, error) {
	if err != nil {
		return nil, err
	}
	return &flakyLock{Lock: l}, nil
}

type flakyLock struct {
	Lock
	failed bool
}

func (l *flakyLock) Extend(ctx context.Context, ttl time.Duration) error {
	if !l.failed {
		l.failed = true
		return context.DeadlineExceeded // transient: the lock is still ours for 10 s
	}
	return l.Lock.Extend(ctx, ttl)
}

// One transient Extend failure during a stop that takes a few seconds abandons the
// step after WaitingForShutdown was written and before the stop reached the
// platform: the app stays up, "stopping", and every request is held until the fail
// timeout, then the app goes to Error.
func TestJob_APassingLockErrorDoesNotAbandonAStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := upApp("app")
		e := newEnv(t, fake, "")
		store := flakyExtendStore{e.store}
		e.job = NewJob(JobOptions{Engine: e.engine, Store: store, PaaS: slowStop{Fake: fake, took: 6 * time.Second},
			Logger: slog.New(slog.DiscardHandler), FastInterval: 5 * time.Second, FullInterval: 30 * time.Second})
		e.engine.SetAsker(e.job)
		p := e.route(config("app", func(c *Config) { c.GracePeriod = conf.Duration(time.Minute) }))
		e.start()
		defer e.stop()
		waitStatus(t, p, StatusWaitingForShutdown, 10*time.Minute)
		time.Sleep(10 * time.Second)
		settle()
		began := time.Now()
		r := do(context.Background(), p, apiRequest("GET", "/api"), false)
		if took := time.Since(began); r.answer != nil || took > time.Minute {
			t.Errorf("request answered %d after %v; status %s; stops that reached the platform: %d",
				r.status(), took, p.route.a.status(), fake.Count("stop", "app"))
		}
	})
}

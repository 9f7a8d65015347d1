package reaper_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/reaper"
)

// gatedPlatform is the recording fake whose starts wait at a gate: the test
// does what it wants to the store while a step is in the middle of a start.
type gatedPlatform struct {
	*paastest.Fake
	entered chan string   // told when a start reaches the gate
	gate    chan struct{} // closed: starts go on
}

func (p gatedPlatform) Start(ctx context.Context, app paas.App) error {
	p.entered <- app.ID
	select {
	case <-p.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.Fake.Start(ctx, app)
}

// TestCluster_LockLeftByAStoreOutageMidStepIsTakenBack: redis-server is killed
// (SIGKILL; its append-only file keeps what it acknowledged) while a step waits
// on the platform's start. The step's release fails, so the app's lock, of this
// leader and this term, is still in the store when it comes back. The leader
// must take its own lock back at its next look, not wait out the lock's TTL (a
// minute here, 15 s by default): the wake goes on as soon as the store is back.
func TestCluster_LockLeftByAStoreOutageMidStepIsTakenBack(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Persist: true})
	const lockTTL = time.Minute
	platform := gatedPlatform{Fake: paastest.New("app"), entered: make(chan string, 1), gate: make(chan struct{})}
	logs := &logtest.Buffer{}
	logger := logs.Logger(slog.LevelDebug).With("node", "n1")
	store := openStore(t, srv, "outage:", logger)
	engine := reaper.NewEngine(reaper.EngineOptions{Node: "n1", Store: store, Logger: logger})
	job := reaper.NewJob(reaper.JobOptions{Engine: engine, Store: store, PaaS: platform, Logger: logger,
		FastInterval: 20 * time.Millisecond, FullInterval: 200 * time.Millisecond, LockTTL: lockTTL})
	engine.SetAsker(job)
	n := &clusterNode{store: store, engine: engine, job: job}
	n.route(t, "route-app", appConfig("app", 5*time.Minute))
	go_ := make(chan struct{})
	close(go_)
	n.run(t, 1, go_)
	testwait.For(t, 10*time.Second, "app Down", func() bool { return recordStatus(n, "app") == reaper.StatusDown })

	if err := store.AskWake(t.Context(), "app", time.Now(), 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	_ = job.Ask(t.Context(), "app")
	select {
	case <-platform.entered: // WaitingForUp is written, the lock held
	case <-time.After(30 * time.Second):
		t.Fatal("the wake's start never reached the platform")
	}
	srv.Kill()
	close(platform.gate)
	testwait.For(t, 30*time.Second, "the step's lock release to fail", func() bool {
		return logs.Lines("releasing an app's lock failed", "app=app") > 0
	})
	srv.Restart()
	back := time.Now()
	testwait.For(t, 2*lockTTL, "app Up", func() bool { return recordStatus(n, "app") == reaper.StatusUp })
	// The app has been up on the platform all along: one look settles it. A
	// bound well under the lock's TTL tells a lock taken back from one waited out.
	if d := time.Since(back); d > lockTTL/3 {
		t.Errorf("the app was Up %v after the store came back: the lock the outage left kept this leader away for its TTL (%v)",
			d.Round(time.Millisecond), lockTTL)
	}
	if c := platform.Count("start", "app"); c != 1 {
		t.Errorf("%d starts, want 1", c)
	}
}

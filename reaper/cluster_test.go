package reaper_test

// These tests put the reaper's engine and job on the real Valkey store (a
// redis-server started for the test) in front of the recording platform fake, with
// no binary and no Raft: the cases where what the cluster relies on is the store
// itself — two deciders that both believe they lead, and a store that goes away.

import (
	"context"
	"fmt"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/reaper/valkeystore"
)

// openStore connects a Valkey store to srv under prefix, closed at the end of the test.
func openStore(t *testing.T, srv *redistest.Server, prefix string, logger *slog.Logger) *valkeystore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := valkeystore.New(ctx, valkeystore.Options{Address: srv.Addr(), Prefix: prefix, Logger: logger,
		DialTimeout: time.Second, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// clusterNode is one node's reaper (engine and job) on its own Valkey store.
type clusterNode struct {
	store  *valkeystore.Store
	engine *reaper.Engine
	job    *reaper.Job
}

func newClusterNode(t *testing.T, srv *redistest.Server, prefix, id string, platform paas.Client, logs *logtest.Buffer) *clusterNode {
	t.Helper()
	logger := logs.Logger(slog.LevelDebug).With("node", id)
	n := &clusterNode{store: openStore(t, srv, prefix, logger)}
	n.engine = reaper.NewEngine(reaper.EngineOptions{Node: id, Store: n.store, Logger: logger})
	n.job = reaper.NewJob(reaper.JobOptions{Engine: n.engine, Store: n.store, PaaS: platform, Logger: logger,
		FastInterval: 20 * time.Millisecond, FullInterval: 200 * time.Millisecond})
	n.engine.SetAsker(n.job)
	return n
}

// run runs the engine, and the job with term, until the test ends.
func (n *clusterNode) run(t *testing.T, term uint64, start <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.engine.Run(ctx) }()
	go func() {
		defer wg.Done()
		<-start
		n.job.Run(ctx, term)
	}()
	t.Cleanup(func() {
		n.engine.Shutdown()
		cancel()
		wg.Wait()
	})
}

// route provisions a reaper plugin for cfg on the node's engine, as the gateway
// does when it builds a route.
func (n *clusterNode) route(t *testing.T, routeID string, cfg reaper.Config) *reaper.Plugin {
	t.Helper()
	var errs conf.Errors
	cfg.Validate("config", &errs)
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	p := &reaper.Plugin{Config: cfg}
	err := p.Provision(plugin.ProvisionContext{
		Context:  context.Background(),
		Logger:   slog.New(slog.DiscardHandler),
		Route:    &plugin.RouteConfig{ID: routeID, Name: routeID},
		Path:     "routes[0].plugins[0].config",
		Services: map[string]any{reaper.ServiceName: n.engine},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cleanup() })
	return p
}

func appConfig(app string, failTimeout time.Duration) reaper.Config {
	c := reaper.DefaultConfig()
	c.AppID = app
	c.GracePeriod = conf.Duration(time.Hour)
	c.FailTimeout = conf.Duration(failTimeout)
	zero := conf.Duration(0)
	c.ReadyDelay = &zero
	return c
}

// access sends an API request through the plugin's access step and ends it: a nil
// answer means the request was let through to the app.
func access(ctx context.Context, p *reaper.Plugin) (*plugin.Answer, error) {
	req := httptest.NewRequest(http.MethodGet, "/api", nil).WithContext(ctx)
	req.Header.Set("Accept", "application/json")
	ex := &plugin.Exchange{Request: req, ID: "req-cluster", Start: time.Now(), Logger: slog.New(slog.DiscardHandler)}
	a, err := p.ValidateAccess(ex)
	ex.Finish()
	return a, err
}

// slowPlatform is the recording fake with observations and starts that take a
// moment.
type slowPlatform struct {
	*paastest.Fake
	delay time.Duration
}

func (p slowPlatform) Observe(ctx context.Context, app paas.App) (paas.Observation, error) {
	time.Sleep(p.delay)
	return p.Fake.Observe(ctx, app)
}

func (p slowPlatform) Start(ctx context.Context, app paas.App) error {
	time.Sleep(p.delay)
	return p.Fake.Start(ctx, app)
}

func recordStatus(n *clusterNode, app string) reaper.Status {
	rec, ok := n.engine.Record(app)
	if !ok {
		return reaper.StatusWaitingForInit
	}
	return rec.Status
}

// TestCluster_TwoLeadersStartEachAppOnce plays a partition: two nodes both believe
// they lead (terms 5 and 6), share one Valkey, and are asked again and again to
// wake the same sleeping apps. The term-6 node takes the term-5 node's locks over
// at once; the term-5 node checks its lock after writing a start's record and
// before calling the platform, and the term-6 node gives a start it finds not yet
// accepted UncertainStartGrace to land: exactly one start per app must reach the
// platform, and the term-6 record must never be replaced by a term-5 one.
func TestCluster_TwoLeadersStartEachAppOnce(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	const prefix = "partition:"
	apps := make([]string, 12)
	for i := range apps {
		apps[i] = fmt.Sprintf("app%02d", i)
	}
	fake := paastest.New(apps...)
	fake.Manual = true // starts stay WANTS_TO_BE_UP until the test finishes them
	logs := &logtest.Buffer{}
	// Platform calls that take a little time, as real ones do, widen the window in
	// which both jobs handle the same app.
	platform := slowPlatform{Fake: fake, delay: 15 * time.Millisecond}
	old := newClusterNode(t, srv, prefix, "n-old", platform, logs)
	cur := newClusterNode(t, srv, prefix, "n-new", platform, logs)
	for _, n := range []*clusterNode{old, cur} {
		for _, app := range apps {
			n.route(t, "route-"+app, appConfig(app, time.Minute))
		}
	}

	// A third client watches every record for a term going back.
	watcher := openStore(t, srv, prefix, slog.New(slog.DiscardHandler))
	var regressions atomic.Int64
	var regressionText atomic.Value
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		highest := map[string]uint64{}
		for watchCtx.Err() == nil {
			recs, err := watcher.Records(watchCtx)
			if err != nil {
				continue
			}
			for _, r := range recs {
				if r.Term < highest[r.AppID] {
					regressions.Add(1)
					regressionText.Store(fmt.Sprintf("%s: term %d after term %d (%s)", r.AppID, r.Term, highest[r.AppID], r.Status))
				}
				highest[r.AppID] = max(highest[r.AppID], r.Term)
			}
		}
	}()
	t.Cleanup(func() { stopWatch(); <-watchDone })

	// The term-5 leader ran alone first: the records it wrote say Down, term 5.
	startOld, startNew := make(chan struct{}), make(chan struct{})
	old.run(t, 5, startOld)
	cur.run(t, 6, startNew)
	close(startOld)
	testwait.For(t, 10*time.Second, "every app Down, term 5, on both nodes", func() bool {
		for _, app := range apps {
			rec, ok := cur.engine.Record(app)
			if !ok || rec.Status != reaper.StatusDown || rec.Term != 5 || recordStatus(old, app) != reaper.StatusDown {
				return false
			}
		}
		return true
	})

	// Then the term-6 leader begins while wake asks arrive on both nodes, stored and
	// passed to each node's own job, from many goroutines at once: for each app,
	// either job may take the lock first.
	ctx := t.Context()
	var wg sync.WaitGroup
	close(startNew)
	for _, n := range []*clusterNode{old, cur} {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 25 {
					for _, app := range apps {
						if err := n.store.AskWake(ctx, app, time.Now(), 30*time.Minute); err != nil {
							t.Errorf("AskWake: %v", err)
							return
						}
						_ = n.job.Ask(ctx, app)
					}
				}
			}()
		}
	}
	wg.Wait()
	testwait.For(t, 10*time.Second, "a start for every app", func() bool {
		for _, app := range apps {
			if fake.Count("start", app) == 0 {
				return false
			}
		}
		return true
	})
	// Let both jobs look at the booting apps many more times, with the asks
	// repeated, before the platform finishes the starts.
	observed := len(fake.Calls("observe"))
	testwait.For(t, 10*time.Second, "more passes over the booting apps", func() bool {
		for _, n := range []*clusterNode{old, cur} {
			for _, app := range apps {
				_ = n.job.Ask(ctx, app)
			}
		}
		return len(fake.Calls("observe")) >= observed+10*len(apps)
	})
	for _, app := range apps {
		fake.FinishStart(app)
	}
	testwait.For(t, 10*time.Second, "every app Up on both nodes", func() bool {
		for _, app := range apps {
			if recordStatus(old, app) != reaper.StatusUp || recordStatus(cur, app) != reaper.StatusUp {
				return false
			}
		}
		return true
	})

	for _, app := range apps {
		if n := fake.Count("start", app); n != 1 {
			t.Errorf("%s: %d start calls reached the platform, want exactly 1", app, n)
		}
		rec, ok, err := watcher.Record(ctx, app)
		if err != nil || !ok {
			t.Fatalf("%s: record: %v %v", app, ok, err)
		}
		if rec.Term != 6 || rec.Status != reaper.StatusUp {
			t.Errorf("%s: stored record has term %d, status %s; want term 6 (the newer leader), Up", app, rec.Term, rec.Status)
		}
	}
	stopWatch()
	<-watchDone
	if n := regressions.Load(); n > 0 {
		t.Errorf("a term-5 record replaced a term-6 one %d times; last: %v", n, regressionText.Load())
	}
	// Either interleaving is allowed; the log says which ones this run saw.
	t.Logf("apps woken by the term-5 node: %d, by the term-6 node: %d",
		logs.Lines("node=n-old", "app woken"), logs.Lines("node=n-new", "app woken"))
}

// TestCluster_StoreDownAwakeAppsServedSleepingHoldsBounded stops Valkey under a
// running node: the awake app keeps being let through at once, a held request for
// the sleeping app gets the fail_timeout's 504, the outage is logged a few times
// rather than per request, and once Valkey is back the sleeping app wakes on the
// next request, with nothing restarted.
func TestCluster_StoreDownAwakeAppsServedSleepingHoldsBounded(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Persist: true})
	fake := paastest.New("awake", "asleep")
	fake.Set("awake", paastest.App{State: paas.StateShouldBeUp,
		Deployment: &paas.Deployment{State: paas.DeploymentOK, Action: "DEPLOY", At: time.Now().Add(-time.Hour)}})
	logs := &logtest.Buffer{}
	n := newClusterNode(t, srv, "down:", "n1", fake, logs)
	awake := n.route(t, "route-awake", appConfig("awake", time.Minute))
	const failTimeout = 2 * time.Second
	short := n.route(t, "route-asleep-short", appConfig("asleep", failTimeout))
	long := n.route(t, "route-asleep-long", appConfig("asleep", 40*time.Second))
	go_ := make(chan struct{})
	close(go_)
	n.run(t, 1, go_)
	testwait.For(t, 10*time.Second, "awake Up, asleep Down", func() bool {
		return recordStatus(n, "awake") == reaper.StatusUp && recordStatus(n, "asleep") == reaper.StatusDown
	})

	srv.Stop()
	down := time.Now()

	// The awake app: let through at once, however many requests.
	const requests = 200
	for i := range requests {
		begin := time.Now()
		a, err := access(t.Context(), awake)
		if err != nil || a != nil {
			t.Fatalf("request %d for the awake app with the store down: answer %+v, err %v; want it let through", i, a, err)
		}
		// Far above a loaded machine's scheduling delays (372 ms seen at a
		// load average of 36), far below a wait on the store's dial and
		// command timeouts (seconds).
		if d := time.Since(begin); d > 2*time.Second {
			t.Fatalf("request %d for the awake app took %v with the store down: the hot path waits on the store", i, d)
		}
	}

	// The sleeping app: several holds at once, each answered 504 at its fail timeout.
	type held struct {
		a   *plugin.Answer
		err error
		d   time.Duration
	}
	results := make(chan held, 20)
	for range cap(results) {
		go func() {
			begin := time.Now()
			a, err := access(t.Context(), short)
			results <- held{a, err, time.Since(begin)}
		}()
	}
	for range cap(results) {
		r := <-results
		if r.err != nil || r.a == nil || r.a.Status != http.StatusGatewayTimeout {
			t.Fatalf("held request with the store down: answer %+v, err %v; want 504", r.a, r.err)
		}
		if r.d < failTimeout-50*time.Millisecond || r.d > failTimeout+2*time.Second {
			t.Errorf("held request answered after %v, want about the fail timeout (%v)", r.d, failTimeout)
		}
	}
	if c := fake.Count("start", "asleep"); c != 0 {
		t.Fatalf("%d starts while the store was down: a start needs the app's lock", c)
	}
	// The job's passes and the engine's polls and flushes all failed meanwhile: a
	// handful of warnings in all, not one per request or per tick.
	outage := time.Since(down)
	warns := logs.Lines("level=WARN")
	t.Logf("store down for %v: %d warning lines", outage.Round(time.Millisecond), warns)
	if warns == 0 || warns > 8 {
		t.Errorf("%d warning lines during a %v outage with %d requests, want a handful (one per failing part per interval):\n%s",
			warns, outage.Round(time.Millisecond), requests+cap(results), logs.String())
	}

	srv.Restart()
	// Awake still let through, sleeping woken on the next request, the same
	// engine, job and store.
	if a, err := access(t.Context(), awake); err != nil || a != nil {
		t.Fatalf("awake app after the store came back: %+v %v", a, err)
	}
	begin := time.Now()
	a, err := access(t.Context(), long)
	if err != nil || a != nil {
		t.Fatalf("held request after the store came back: answer %+v, err %v; want it let through once the app is up", a, err)
	}
	t.Logf("the wake after the store came back took %v", time.Since(begin).Round(time.Millisecond))
	if c := fake.Count("start", "asleep"); c != 1 {
		t.Errorf("%d starts, want 1", c)
	}
	rec, ok, err := n.store.Record(t.Context(), "asleep")
	if err != nil || !ok || rec.Status != reaper.StatusUp {
		t.Errorf("stored record after recovery: %+v %v %v, want Up", rec, ok, err)
	}
}

// TestCluster_AskFailedInStoreOutageDoesNotDelayTheNextWake: a wake asked while
// Valkey is down is neither stored nor handled (the job cannot read its pass data),
// so it must not count as asked: the first request once Valkey is back wakes the
// app at once, instead of waiting for the engine's next ask (AskInterval, 10 s).
func TestCluster_AskFailedInStoreOutageDoesNotDelayTheNextWake(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Persist: true})
	fake := paastest.New("app")
	logs := &logtest.Buffer{}
	n := newClusterNode(t, srv, "lost:", "n1", fake, logs)
	short := n.route(t, "route-short", appConfig("app", time.Second))
	long := n.route(t, "route-long", appConfig("app", 30*time.Second))
	go_ := make(chan struct{})
	close(go_)
	n.run(t, 1, go_)
	testwait.For(t, 10*time.Second, "app Down", func() bool { return recordStatus(n, "app") == reaper.StatusDown })

	srv.Stop()
	if a, err := access(t.Context(), short); err != nil || a == nil || a.Status != http.StatusGatewayTimeout {
		t.Fatalf("held request with the store down: %+v %v, want 504", a, err)
	}
	srv.Restart()

	begin := time.Now()
	if a, err := access(t.Context(), long); err != nil || a != nil {
		t.Fatalf("held request after the store came back: %+v %v, want it let through", a, err)
	}
	// The platform starts at once and ready_delay is 0: a wake asked now takes a
	// job step, not seconds.
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("the first wake after the store came back took %v: the ask that failed during the outage still counted as made", d.Round(time.Millisecond))
	}
	if c := fake.Count("start", "app"); c != 1 {
		t.Errorf("%d starts, want 1", c)
	}
}

// blipStore is the Valkey store with lock releases that fail on demand, as they do
// when Valkey restarts at that moment (seen with a real redis-server restart in
// the e2e tests): the release's connection is refused, and the lock stays.
type blipStore struct {
	*valkeystore.Store
	failReleases atomic.Int32
}

func (s *blipStore) Lock(ctx context.Context, appID string, term uint64, ttl time.Duration) (reaper.Lock, error) {
	return s.blip(s.Store.Lock(ctx, appID, term, ttl))
}

// LockAs is how the job takes its locks.
func (s *blipStore) LockAs(ctx context.Context, appID string, term uint64, holder string, ttl time.Duration) (reaper.Lock, error) {
	return s.blip(s.Store.LockAs(ctx, appID, term, holder, ttl))
}

func (s *blipStore) blip(l reaper.Lock, err error) (reaper.Lock, error) {
	if err != nil {
		return nil, err
	}
	return &blipLock{Lock: l, s: s}, nil
}

type blipLock struct {
	reaper.Lock
	s *blipStore
}

func (l *blipLock) Release(ctx context.Context) error {
	if l.s.failReleases.Add(-1) >= 0 {
		return fmt.Errorf("release: connection refused (injected): %w", valkeystore.ErrUnreachable)
	}
	return l.Lock.Release(ctx)
}

// TestCluster_LockReleaseFailedInStoreBlipDoesNotStallTheApp: a step whose lock
// release fails because Valkey blinked leaves the lock in the store; the job must
// not then leave the app alone for the lock's whole TTL (15 s): a wake asked right
// after must go through within a few ticks.
func TestCluster_LockReleaseFailedInStoreBlipDoesNotStallTheApp(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	fake := paastest.New("app")
	logs := &logtest.Buffer{}
	logger := logs.Logger(slog.LevelDebug).With("node", "n1")
	store := &blipStore{Store: openStore(t, srv, "blip:", logger)}
	engine := reaper.NewEngine(reaper.EngineOptions{Node: "n1", Store: store, Logger: logger})
	job := reaper.NewJob(reaper.JobOptions{Engine: engine, Store: store, PaaS: fake, Logger: logger,
		FastInterval: 20 * time.Millisecond, FullInterval: 200 * time.Millisecond})
	engine.SetAsker(job)
	n := &clusterNode{store: store.Store, engine: engine, job: job}
	n.route(t, "route-app", appConfig("app", time.Minute))
	go_ := make(chan struct{})
	close(go_)
	n.run(t, 1, go_)
	testwait.For(t, 10*time.Second, "app Down", func() bool { return recordStatus(n, "app") == reaper.StatusDown })

	// The next release fails; the wake asked now must still be handled promptly.
	store.failReleases.Store(1)
	begin := time.Now()
	if err := store.AskWake(t.Context(), "app", begin, 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	_ = job.Ask(t.Context(), "app")
	testwait.For(t, 30*time.Second, "app Up", func() bool { return recordStatus(n, "app") == reaper.StatusUp })
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("the app was woken %v after the ask: the lock left by the failed release kept the job away for its TTL", d.Round(time.Millisecond))
	}
	if c := fake.Count("start", "app"); c != 1 {
		t.Errorf("%d starts, want 1", c)
	}
}

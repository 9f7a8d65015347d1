package reaper

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas"
)

// Fence is what the job asks before it acts on the platform: whether this node
// still leads. A single node always does.
type Fence interface {
	VerifyLeader(ctx context.Context) error
}

// JobOptions configures the Job.
type JobOptions struct {
	Engine *Engine
	Store  Store
	PaaS   paas.Client
	Logger *slog.Logger
	// FastInterval: apps in transition or with pending asks (default 5 s).
	// FullInterval: every app (default 30 s).
	FastInterval, FullInterval time.Duration
	// LockTTL bounds a per-app lock (default 15 s); the job extends it while it
	// works on the app, so it only matters when a leader dies holding it.
	LockTTL time.Duration
	// Fence is consulted before every start and stop; nil on a single node.
	Fence Fence
	// SettleDelay is how long the job waits, after marking an app
	// WaitingForShutdown, for the other nodes to see it and flush their traffic,
	// before it checks traffic once more and stops the app. 0 on a single node,
	// whose own traffic counts are exact.
	SettleDelay time.Duration
	// Workers bounds the apps handled at once (default 16).
	Workers int
	// Now reads the clock (tests); nil means time.Now.
	Now func() time.Time
	// BusyTimeout bounds one GET of an app's busy_url (default BusyTimeout).
	BusyTimeout time.Duration
}

// Job applies the reaper's decisions. It runs on the leader only (on a single node,
// always): a fast tick for apps in transition or with wake asks, a full pass over
// every app, and an immediate look at an app when a wake is asked or the driver
// reports a change. Each app is handled under its lock in the store; apps are
// handled concurrently, one step at a time per app.
type Job struct {
	opts JobOptions
	log  *slog.Logger

	kicks chan string
	sem   chan struct{}
	// holder names this job to the store's locks (Locker.LockAs): random, so
	// that no other job, on this node or another, ever matches it.
	holder string

	mu      sync.Mutex
	running map[string]bool // an app's step runs
	again   map[string]bool // run the app's step once more when it ends

	unmanagedSince map[string]time.Time // guarded by mu
	// The managed apps' policies and depends_on as the last targets read
	// them, for the decisions of groups and depends_on (jobgroup.go); guarded
	// by mu.
	policies map[string]Policy
	deps     *depIndex
	apiErr   throttle
	prewake  prewakes
	busy     *busyProbes
}

// unmanagedGrace is how long an app no route manages is kept awake and known before
// it is forgotten.
const unmanagedGrace = 5 * time.Minute

// NewJob returns a job; call Run while this node leads.
func NewJob(opts JobOptions) *Job {
	orDefault(&opts.FastInterval, 5*time.Second)
	orDefault(&opts.FullInterval, 30*time.Second)
	orDefault(&opts.LockTTL, 15*time.Second)
	orDefault(&opts.Workers, 16)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Job{
		opts:           opts,
		log:            opts.Logger,
		kicks:          make(chan string, 1024),
		holder:         rand.Text(),
		sem:            make(chan struct{}, opts.Workers),
		running:        map[string]bool{},
		again:          map[string]bool{},
		unmanagedSince: map[string]time.Time{},
		busy:           newBusyProbes(opts.Logger, opts.BusyTimeout, opts.Now),
	}
}

// Ask makes the job look at the app at once. It never blocks: when too many asks
// are queued, the stored ask waits for the next fast tick.
func (j *Job) Ask(_ context.Context, appID string) error {
	select {
	case j.kicks <- appID:
	default:
	}
	return nil
}

// Run runs the job until ctx ends (leadership lost or shutdown), then waits for the
// steps under way, which end early since they share ctx. term is the Raft term this
// node leads in (0 on a single node): every record it writes carries it.
func (j *Job) Run(ctx context.Context, term uint64) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if w, ok := j.opts.PaaS.(paas.Watcher); ok {
		w.Watch(ctx, func(appID string) { _ = j.Ask(ctx, appID) })
	}
	// The first pass picks up whatever the previous leader left (stored asks,
	// apps in transition); say when it is done, for operators and benchmarks.
	began := time.Now()
	j.log.Info("job running: this node decides for the apps", "term", term)
	var first sync.WaitGroup
	defer first.Wait()
	j.pass(ctx, &first, term, true)
	go func() {
		first.Wait()
		if ctx.Err() == nil {
			j.log.Info("job: first pass done", "term", term, "took", time.Since(began))
		}
	}()
	fast := time.NewTicker(j.opts.FastInterval)
	defer fast.Stop()
	full := time.NewTicker(j.opts.FullInterval)
	defer full.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-j.kicks:
			ids := map[string]bool{id: true}
			for more := true; more; {
				select {
				case id := <-j.kicks:
					ids[id] = true
				default:
					more = false
				}
			}
			j.handle(ctx, &wg, term, ids)
		case <-fast.C:
			j.pass(ctx, &wg, term, false)
		case <-full.C:
			j.pass(ctx, &wg, term, true)
		}
	}
}

// passData is what one pass reads once for all its apps.
type passData struct {
	obs      map[paas.App]paas.Observation // nil: observe each app
	access   map[string]time.Time
	inFlight map[string]int
	asks     map[string]time.Time
	settings Settings
}

// load reads the pass's shared data; batch observes every app in one call when the
// driver can.
func (j *Job) load(ctx context.Context, apps []paas.App, batch bool) (*passData, error) {
	j.opts.Engine.Flush(ctx) // our own counts, fresh
	pd := &passData{}
	var err error
	if pd.access, err = j.opts.Store.LastAccess(ctx); err != nil {
		return nil, fmt.Errorf("reading access times: %w", err)
	}
	if pd.inFlight, err = j.opts.Store.InFlight(ctx); err != nil {
		return nil, fmt.Errorf("reading in-flight counts: %w", err)
	}
	if pd.asks, err = j.opts.Store.WakeAsks(ctx); err != nil {
		return nil, fmt.Errorf("reading wake asks: %w", err)
	}
	pd.asks = j.expandAsks(ctx, pd.asks) // a wake of a group's member wakes the group
	for _, a := range apps {
		n := 0
		if _, asked := pd.asks[a.ID]; asked {
			n = 1
		}
		j.observer().AsksPending(a.ID, n)
	}
	if pd.settings, err = j.opts.Store.Settings(ctx); err != nil {
		return nil, fmt.Errorf("reading settings: %w", err)
	}
	if b, ok := j.opts.PaaS.(paas.BatchObserver); ok && batch && len(apps) > 0 {
		if err = j.timed("observe_all", func() (err error) { pd.obs, err = b.ObserveAll(ctx, apps); return err }); err != nil {
			return nil, fmt.Errorf("observing apps: %w", err)
		}
	}
	return pd, nil
}

// target is one app a pass looks at.
type target struct {
	app     paas.App
	name    string
	policy  Policy
	managed bool
}

// pass looks at every app (full) or at those in transition or with asks.
func (j *Job) pass(ctx context.Context, wg *sync.WaitGroup, term uint64, full bool) {
	targets := j.targets(ctx, full, nil)
	j.run(ctx, wg, term, targets)
}

// handle looks at the asked apps now.
func (j *Job) handle(ctx context.Context, wg *sync.WaitGroup, term uint64, ids map[string]bool) {
	j.run(ctx, wg, term, j.targets(ctx, true, j.withRelated(ids)))
}

func (j *Job) run(ctx context.Context, wg *sync.WaitGroup, term uint64, targets []target) {
	if len(targets) == 0 || ctx.Err() != nil {
		return
	}
	apps := make([]paas.App, len(targets))
	for i, t := range targets {
		apps[i] = t.app
	}
	pd, err := j.load(ctx, apps, len(targets) > 1)
	if err != nil {
		j.apiErr.log(j.log, "a reaper pass could not start; trying again at the next tick", err)
		return
	}
	for _, t := range targets {
		j.schedule(ctx, wg, term, t, pd)
	}
}

// targets lists the apps to look at: every managed app and every stored record (an
// app no route manages any more is woken and forgotten), or, for a fast pass, those
// in transition or with a pending ask; only asked ids when ids is not nil.
func (j *Job) targets(ctx context.Context, full bool, ids map[string]bool) []target {
	managed, deps := j.opts.Engine.managedAndDeps()
	known := map[string]bool{}
	var asks map[string]time.Time
	if !full {
		asks, _ = j.opts.Store.WakeAsks(ctx)
		asks = j.expandAsks(ctx, asks)
	}
	var out []target
	policies := make(map[string]Policy, len(managed))
	for _, m := range managed {
		policies[m.App.ID] = m.Policy
	}
	j.mu.Lock()
	j.policies, j.deps = policies, deps
	for _, m := range managed {
		delete(j.unmanagedSince, m.App.ID) // managed again: a later unmanaged spell starts afresh
	}
	j.mu.Unlock()
	for _, m := range managed {
		known[m.App.ID] = true
		if ids != nil && !ids[m.App.ID] {
			continue
		}
		if !full {
			rec, ok := j.opts.Engine.Record(m.App.ID)
			_, asked := asks[m.App.ID]
			// An operator's forced stop of an app in Error may wait for its
			// requests to end: looked at on each fast tick too.
			if ok && !rec.Status.Transitional() && !asked && !rec.SleepAsk.stopsStuck(rec) {
				continue
			}
		}
		out = append(out, target{app: m.App, name: m.Name, policy: m.Policy, managed: true})
	}
	// The stored records are read for the apps no route manages; a look at asked
	// apps that routes manage (a wake ask, the driver's news that an app is ready)
	// needs none of them, and does not wait for that read.
	if full && (ids == nil || anyUnknown(ids, known)) {
		recs, err := j.opts.Store.Records(ctx)
		if err != nil {
			j.apiErr.log(j.log, "reading records failed", err)
		}
		for _, r := range recs {
			if known[r.AppID] || (ids != nil && !ids[r.AppID]) {
				continue
			}
			out = append(out, target{app: paas.App{ID: r.AppID, Owner: r.Owner}, name: r.Name,
				policy: Policy{GracePeriod: DefaultGracePeriod, FailTimeout: DefaultFailTimeout}})
		}
	}
	return out
}

// anyUnknown reports whether an id of ids is not in known.
func anyUnknown(ids, known map[string]bool) bool {
	for id := range ids {
		if !known[id] {
			return true
		}
	}
	return false
}

// schedule runs the app's step in a worker, unless one runs already: then the step
// runs once more when it ends, so that no ask is lost and no app is handled twice at
// once on this node (the store's lock covers other nodes).
func (j *Job) schedule(ctx context.Context, wg *sync.WaitGroup, term uint64, t target, pd *passData) {
	j.mu.Lock()
	if j.running[t.app.ID] {
		j.again[t.app.ID] = true
		j.mu.Unlock()
		return
	}
	j.running[t.app.ID] = true
	j.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case j.sem <- struct{}{}:
			case <-ctx.Done():
				j.forget(t.app.ID)
				return
			}
			j.step(ctx, term, t, pd)
			<-j.sem
			if !j.done(t.app.ID) {
				return
			}
			// Asked again while it ran: look once more, with fresh data.
			fresh, err := j.load(ctx, []paas.App{t.app}, false)
			if err != nil {
				j.forget(t.app.ID)
				return
			}
			pd = fresh
		}
	}()
}

// done marks the app's step finished; it reports whether it must run again (and
// then keeps it marked running).
func (j *Job) done(id string) (again bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.again[id] {
		delete(j.again, id)
		return true
	}
	delete(j.running, id)
	return false
}

// forget marks the app's step finished, dropping any pending "again".
func (j *Job) forget(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.again, id)
	delete(j.running, id)
}

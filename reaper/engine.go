package reaper

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/ratelimit"
)

// EngineOptions configures an Engine.
type EngineOptions struct {
	Node   string
	Store  Store
	Logger *slog.Logger
	// ReadyDelay is the driver's default wait after Up before held requests go
	// through, for routes that do not set ready_delay.
	ReadyDelay time.Duration
	// ReadyDelayFor, when set, gives the default wait of each app in place of
	// ReadyDelay: with several drivers (paas/multi), an app on a probed driver
	// needs none, one on Clever Cloud a few seconds.
	ReadyDelayFor func(appID string) time.Duration
	// FlushInterval is how often traffic is written to the store (default 5 s).
	FlushInterval time.Duration
	// PollInterval is how often records are re-read from the store while requests
	// are held, in case a notification was missed (default 2 s).
	PollInterval time.Duration
	// AskInterval is how often a wake is asked again while requests wait (default
	// 10 s); AskTTL is how long a stored ask lives (default 30 min).
	AskInterval, AskTTL time.Duration
	// GuessAppID finds the app of a route whose reaper plugin does not name it
	// (Clever Cloud: from an app-<uuid>.cleverapps.io backend); nil guesses nothing.
	GuessAppID func(route *plugin.RouteConfig) (string, bool)
	// FindApp finds the app of a route that neither names it nor lets GuessAppID
	// guess it (Clever Cloud: the app whose vhosts include the route's domains).
	// It may call the platform: it is given the provisioning's context, bounded
	// by FindAppTimeout. nil finds nothing.
	FindApp func(ctx context.Context, route *plugin.RouteConfig) (string, error)
	// FindAppTimeout bounds one FindApp (default 30 s).
	FindAppTimeout time.Duration
	// NotReadyYet recognises an answer the platform's edge gives in place of an app
	// with no instance (Clever Cloud's 404 with X-CleverCloudUpgrade: true); nil
	// recognises none. It is one for the node, whatever the app's driver: with
	// several drivers, it matches only Clever Cloud's answer, which no other
	// driver's app gives.
	NotReadyYet func(*http.Response) bool
	// MaxHeld bounds the requests held on this node for all apps together (each
	// app is also bounded by its routes' max_held); 0 means no node-wide bound.
	MaxHeld int
	// Observer is told what the engine and its job do (metrics); nil: nothing.
	Observer Observer
	// MaxLiveStreams bounds the waiting pages' live progress streams open on
	// this node (default DefaultMaxLiveStreams).
	MaxLiveStreams int
	// AdminToken is the node's admin token: with it (Authorization: Bearer), a
	// route's waiting page can be previewed (WellKnownPreviewPath). Unset: only
	// routes that allow the preview show it.
	AdminToken conf.Secret
	// MaxWakesPerClient bounds the wakes one client address (an IPv6 /64) may
	// start per minute, MaxWakesPerMinute those of the whole node; 0: no
	// such bound (wakelimit.go).
	MaxWakesPerClient, MaxWakesPerMinute int
	// Failures is the budget of failed attempts at the admin token per client
	// that the preview takes from, shared with the admin listener's doors
	// (dashboard.Options.Failures); nil: the engine's own.
	Failures *ratelimit.Failures
	// Notifier is told of the events webhooks announce (notify.go); nil: none.
	Notifier Notifier
	// Policies gives what apps say of their own policy (the platform driver,
	// when it is a paas.PolicyHinter); nil: the routes' policy alone.
	Policies paas.PolicyHinter
	// Readiness is the platform driver when it probes the readiness of the
	// apps it starts (paas.ReadinessWaiter): told of each record of an app in
	// Error, so that nothing probes it then (boots.go); nil: none.
	Readiness paas.ReadinessWaiter
}

// Engine is the reaper of one node. It knows the apps the routes manage and their
// last known records, counts their traffic in memory (traffic.go), holds requests
// for sleeping apps (hold.go) and sends wake asks (wakeask.go). Nothing on the path
// of a request for an awake app waits on I/O: records are cached, traffic is
// flushed in the background.
type Engine struct {
	opts     EngineOptions
	store    Store
	log      *slog.Logger
	asks     *wakeAsks
	holds    *holds
	events   eventLog
	observer Observer
	live     atomic.Int64 // live progress streams open (liveevents.go)
	wakes    *wakeLimits  // nil: wakes are not limited

	mu   sync.RWMutex
	apps map[string]*app
	topo *topology // groups and depends_on (topology.go); nil: none

	// deps is the managed apps' depends_on as last looked at (depindex.go),
	// and cyclesSaid the cycles last logged: each change is logged once.
	deps       atomic.Pointer[depIndex]
	cyclesMu   sync.Mutex
	cyclesSaid string

	refresh  chan string // app ids whose record should be re-read
	flushNow chan struct{}

	// inFlightMu makes writing this node's in-flight counts and remembering
	// them one step, as OpenEverywhere sees it.
	inFlightMu    sync.Mutex
	flushedCounts flushedCounts
	storeErr      throttle
	flushErr      throttle
}

// ManagedApp is an app at least one route manages, with its effective policy: the
// merged policy of those routes (the longest grace period and fail timeout, every
// keep-up window), under what the app says of its own (applyHint).
type ManagedApp struct {
	App    paas.App
	Name   string
	Routes []string
	Policy Policy
	// GraceFrom says where the grace period comes from when the app set it
	// (a container's label); empty: from the routes.
	GraceFrom string
	// PolicyProblem is what the app says of its own policy and cannot be used
	// (an unreadable label): the routes' value applies.
	PolicyProblem string
	// BusyFrom says where Policy.BusyURL comes from: "route <id>", the
	// driver's words for the app's own ("label reaper.busy_url of container
	// worker-1", "config paas.apps[].busy_url"), or "driver hint" when the
	// driver does not say; empty when there is no busy_url.
	BusyFrom string
	// Group is the id of the group the app is in ("" when none).
	Group string
	// DependsOn are the apps it needs up first, as the look that listed it
	// found them (none for an app on a cycle).
	DependsOn []string
	// DependsOnProblem says why the app's depends_on is not honoured: it
	// makes a cycle (through the apps' own hints, which the configuration's
	// check cannot see). The app then depends on nothing.
	DependsOnProblem string
}

// app is the node's view of one app: its last known record, and this node's
// traffic, wake asks and held requests for it.
type app struct {
	id string

	rec      atomic.Pointer[Record] // nil: never observed (WaitingForInit)
	upSeen   atomic.Int64           // unix nanoseconds, this node's clock, when it saw the app come up
	notifyMu sync.Mutex
	notify   chan struct{} // closed and replaced on every record change

	appTraffic
	appAsks
	appHolds
	awake       appAwake
	boots       bootRing
	firstAnswer atomic.Int64 // Wake.AskedAt (unix nanoseconds) of the wake whose first answer this node recorded
	commits     commitGate   // this node's commits of the app, and the records set aside meanwhile (commit.go)

	// guarded by Engine.mu
	owner  string
	claims map[*Config]claim // one per reaper plugin instance that manages the app
}

// claim is a route's hold on an app: while a reload builds new routes, the old
// and the new instance of a route both hold one.
type claim struct {
	routeID, routeName string
	dropIdle           func() // closes the idle connections to the route's backends
}

// NewEngine returns an engine with no app; routes register theirs as the reaper
// plugin is provisioned. Call Run to start its background work.
func NewEngine(opts EngineOptions) *Engine {
	orDefault(&opts.FlushInterval, 5*time.Second)
	orDefault(&opts.PollInterval, 2*time.Second)
	orDefault(&opts.AskInterval, 10*time.Second)
	orDefault(&opts.AskTTL, 30*time.Minute)
	orDefault(&opts.MaxLiveStreams, DefaultMaxLiveStreams)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Failures == nil {
		opts.Failures = ratelimit.NewDoors(opts.Logger)
	}
	e := &Engine{
		opts:     opts,
		store:    opts.Store,
		log:      opts.Logger,
		apps:     map[string]*app{},
		refresh:  make(chan string, 256),
		flushNow: make(chan struct{}, 1),
		asks:     &wakeAsks{store: opts.Store, interval: opts.AskInterval, ttl: opts.AskTTL, log: opts.Logger},
	}
	e.holds = newHolds(e, opts.PollInterval, opts.MaxHeld, opts.Logger)
	e.wakes = newWakeLimits(opts.MaxWakesPerClient, opts.MaxWakesPerMinute)
	e.observer = opts.Observer
	if e.observer == nil {
		e.observer = noObserver{}
	}
	return e
}

// orDefault sets *v to d when it is not set (zero or less).
func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Shutdown answers every held request at once (a 503 saying the gateway restarts)
// and refuses new holds, so that a draining node does not keep clients waiting for
// an app it will not see wake. Idempotent.
func (e *Engine) Shutdown() { e.holds.shutdown() }

// SetAsker sets where wake asks go; until it is set, asks are only stored.
func (e *Engine) SetAsker(a Asker) { e.asks.setAsker(a) }

// Register makes the route a manager of cfg.AppID. Called when the reaper plugin
// is provisioned; a reload registers the new routes before unregistering the old.
//
// dropIdle, when not nil, closes the idle connections to the route's backends:
// the engine calls it when the app stops or wakes (plugin.Route.DropIdleConnections).
func (e *Engine) Register(routeID, routeName string, cfg *Config, dropIdle func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.apps[cfg.AppID]
	if a == nil {
		a = &app{id: cfg.AppID, notify: make(chan struct{}), claims: map[*Config]claim{}}
		a.poked = make(chan struct{}, 1)
		e.apps[cfg.AppID] = a
		select {
		case e.refresh <- cfg.AppID: // learn its record soon
		default:
		}
	}
	if cfg.OwnerID != "" {
		a.owner = cfg.OwnerID
	}
	a.claims[cfg] = claim{routeID: routeID, routeName: routeName, dropIdle: dropIdle}
}

// Unregister removes the claim of the plugin instance whose config is cfg (the
// same route may hold another claim through a newer instance). The app's counters
// are kept (a reload must not forget traffic), only that claim's policy goes.
func (e *Engine) Unregister(routeID, appID string, cfg *Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a := e.apps[appID]; a != nil {
		delete(a.claims, cfg)
	}
}

// Managed lists the apps that routes manage now, sorted by id, with their
// effective policies. It does not wait on the platform (the hints are the
// driver's memory).
func (e *Engine) Managed() []ManagedApp {
	out, _ := e.managedAndDeps()
	return out
}

// managedAndDeps is Managed with the managed apps' depends_on indexed. It
// asks the driver for each app's hint once.
func (e *Engine) managedAndDeps() ([]ManagedApp, *depIndex) {
	t, hints := e.topology(), e.hintMemo()
	dependsOn := func(pa paas.App) []string { return e.dependsOn(t, pa, hints) }
	out := e.dependenciesManaged(e.groupMembersManaged(e.managed()), dependsOn)
	idx := newDepIndex(out, dependsOn)
	e.noteDeps(idx)
	for i := range out {
		out[i].DependsOn, _ = idx.dependsOnOf(out[i].App.ID)
		if c, ok := idx.refused(out[i].App.ID); ok {
			out[i].DependsOnProblem = "depends_on makes a cycle (" + c + "): ignored"
		}
	}
	if e.opts.Policies != nil {
		for i := range out {
			h, err := hints.AppPolicy(out[i].App)
			out[i] = applyHint(out[i], h, err)
		}
	}
	return out, idx
}

// managed lists the apps that routes manage, with their routes' merged policy.
func (e *Engine) managed() []ManagedApp {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]ManagedApp, 0, len(e.apps))
	for _, a := range e.apps {
		if len(a.claims) == 0 {
			continue
		}
		m := ManagedApp{App: paas.App{ID: a.id, Owner: a.owner}}
		names := map[string]string{}
		for cfg, c := range a.claims {
			if _, dup := names[c.routeID]; !dup {
				m.Routes = append(m.Routes, c.routeID)
			}
			names[c.routeID] = c.routeName
			m.Policy = mergePolicy(m.Policy, cfg.policy())
		}
		sort.Strings(m.Routes)
		m.Name = names[m.Routes[0]]
		m.BusyFrom = busyRoute(a.claims, m.Policy.BusyURL)
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].App.ID < out[j].App.ID })
	return out
}

// mergePolicy combines the policies of several routes on one app: the longest grace
// period, fail timeout and failed boots win, every keep-up window counts.
func mergePolicy(a, b Policy) Policy {
	return Policy{
		GracePeriod: max(a.GracePeriod, b.GracePeriod),
		FailTimeout: max(a.FailTimeout, b.FailTimeout),
		// The most patient route wins, as with the fail timeout.
		MaxFailedBoots: max(a.MaxFailedBoots, b.MaxFailedBoots),
		MustBeUp:       append(append([]Range(nil), a.MustBeUp...), b.MustBeUp...),
		Prewake:        a.Prewake || b.Prewake,
		Location:       cmp.Or(a.Location, b.Location),
		// Routes on one app give one busy_url (reaper check says so); the
		// smaller wins, so that the merge does not depend on the order.
		BusyURL: minNonEmpty(a.BusyURL, b.BusyURL),
		BusyMax: max(a.BusyMax, b.BusyMax),
	}
}

// busyRoute names the route whose busy_url is url, the merged one: "route
// <id>", the first by id when several set it; "" when url is empty.
func busyRoute(claims map[*Config]claim, url string) string {
	if url == "" {
		return ""
	}
	from := ""
	for cfg, c := range claims {
		if cfg.BusyURL == url && (from == "" || c.routeID < from) {
			from = c.routeID
		}
	}
	return "route " + from
}

func (e *Engine) app(id string) *app {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.apps[id]
}

// Record returns the node's last known record of the app, and whether there is one.
func (e *Engine) Record(appID string) (Record, bool) {
	if a := e.app(appID); a != nil {
		if r := a.rec.Load(); r != nil {
			return *r, true
		}
	}
	return Record{}, false
}

func (a *app) status() Status {
	if r := a.rec.Load(); r != nil {
		return r.Status
	}
	return StatusWaitingForInit
}

// changed returns a channel closed at the next change of the app's status or of
// its wake's phases.
func (a *app) changed() <-chan struct{} {
	a.notifyMu.Lock()
	defer a.notifyMu.Unlock()
	return a.notify
}

// dropIdle closes the idle connections to the app's backends, those of every
// route that manages it.
func (e *Engine) dropIdle(a *app) {
	e.mu.RLock()
	drops := make([]func(), 0, len(a.claims))
	for _, c := range a.claims {
		if c.dropIdle != nil {
			drops = append(drops, c.dropIdle)
		}
	}
	e.mu.RUnlock()
	for _, drop := range drops {
		drop()
	}
}

// sameWake reports whether two records' wakes reached the same phases.
func sameWake(a, b *WakeTimes) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (e *Engine) kickFlush() {
	select {
	case e.flushNow <- struct{}{}:
	default:
	}
}

// Run keeps the node's view fresh and flushes traffic until ctx ends, then flushes a
// last time. It follows record notifications when the store pushes them, and
// re-reads every record at the poll interval as a fallback.
func (e *Engine) Run(ctx context.Context) {
	if w, ok := e.store.(RecordWatcher); ok {
		w.Watch(ctx, func(appID string) {
			select {
			case e.refresh <- appID:
			default:
				// Full: the next poll re-reads everything anyway.
			}
		})
	}
	e.pollAll(ctx)
	e.loadBoots(ctx)
	poll := time.NewTicker(e.opts.PollInterval)
	defer poll.Stop()
	flush := time.NewTicker(e.opts.FlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			e.Flush(fctx)
			cancel()
			return
		case id := <-e.refresh:
			e.refreshOne(ctx, id)
		case <-poll.C:
			e.pollAll(ctx)
			e.loadBoots(ctx) // the apps of routes added by a reload
		case <-flush.C:
			e.Flush(ctx)
		case <-e.flushNow:
			e.Flush(ctx)
		}
	}
}

// lookAgain re-reads the app's record, in case a notification was missed, and
// asks again for a wake if it still sleeps: the holds' lookout, while requests
// wait for it.
func (e *Engine) lookAgain(a *app) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.PollInterval)
	e.refreshOne(ctx, a.id)
	cancel()
	if a.status().Asleep() {
		e.asks.ask(a, time.Now())
	}
}

func (e *Engine) refreshOne(ctx context.Context, id string) {
	rec, ok, err := e.store.Record(ctx, id)
	if err != nil {
		e.storeErr.log(e.log, "reading records from the store failed; serving from the last known state", err)
		return
	}
	if ok {
		e.Apply(rec)
	}
}

func (e *Engine) pollAll(ctx context.Context) {
	recs, err := e.store.Records(ctx)
	if err != nil {
		e.storeErr.log(e.log, "reading records from the store failed; serving from the last known state", err)
		return
	}
	for _, r := range recs {
		e.Apply(r)
	}
}

// throttle logs a failure at most once per minute, so that a store that is down
// gives one line per interval rather than one per request.
type throttle struct{ last atomic.Int64 }

func (t *throttle) log(l *slog.Logger, msg string, err error) {
	now := time.Now().UnixNano()
	last := t.last.Load()
	if now-last < int64(time.Minute) || !t.last.CompareAndSwap(last, now) {
		return
	}
	l.Warn(msg, "err", err)
}

// readyDelay is the app's default wait after Up, for routes that do not set
// ready_delay.
func (o *EngineOptions) readyDelay(appID string) time.Duration {
	if o.ReadyDelayFor != nil {
		return o.ReadyDelayFor(appID)
	}
	return o.ReadyDelay
}

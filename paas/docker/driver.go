package docker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

var (
	_ paas.Client       = (*Driver)(nil)
	_ paas.Watcher      = (*Driver)(nil)
	_ paas.Pricer       = (*Driver)(nil)
	_ paas.PolicyHinter = (*Driver)(nil)
	_ paas.Meter        = (*Driver)(nil)
	_ paas.Owner        = (*Driver)(nil)

	_ paas.ReadinessWaiter = (*Driver)(nil)
)

// firstSyncWait bounds how long New waits for each engine to be listed, so that
// Observe answers at once for the containers that run; an engine that does not
// answer by then is followed in the background.
const firstSyncWait = 5 * time.Second

// Driver drives the containers of the configured engines. It is safe for
// concurrent use. Its goroutines are bounded: one per engine (its event stream),
// and per app at most one that starts it or waits for its readiness.
type Driver struct {
	log    *slog.Logger
	prober *probe.Prober
	hosts  []*host // in the configuration's order
	labels bool

	// base ends with Close: streams, probes and boots end with it.
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// recMu orders the reads of containers and what they change: each read
	// (an event's, a start's or a stop's) is recorded and reconciled before the
	// next is made, so that an older read never overwrites a newer one. Taken
	// before mu and the apps' locks.
	recMu sync.Mutex

	mu       sync.Mutex // guards what follows; never held while an app's lock is
	closed   bool
	known    paas.KnownApps[*app] // declared apps fixed by New; discovered ones read from labels
	warned   map[string]bool      // conflicts already logged
	watchers paas.Watchers
}

// New returns a driver for opts.Config. It connects to every engine, lists its
// containers and adopts those that run (one readiness probe each), waiting at most
// firstSyncWait per engine; an engine that cannot be reached does not make New
// fail: Observe says it is unavailable until it answers. New fails only on an
// invalid configuration or an engine address the client cannot use.
func New(opts Options) (*Driver, error) {
	var errs conf.Errors
	cfg := opts.Config
	for i := range cfg.Apps {
		cfg.Apps[i].Validate(conf.Index("paas.docker.apps", i), &errs)
	}
	cfg.Validate("paas.docker", &errs)
	if err := errs.Err(); err != nil {
		return nil, fmt.Errorf("docker: invalid configuration:\n%w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lookup, ua := opts.Lookup, opts.UserAgent
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if ua == "" {
		ua = "reaper"
	}
	d := &Driver{
		log: logger, prober: probe.New(logger), labels: cfg.LabelsOn(),
		warned: map[string]bool{},
	}
	d.base, d.cancel = context.WithCancel(context.Background())
	byName := map[string]*host{}
	for _, hc := range cfg.engines(lookup) {
		eng, err := dial(hc, ua)
		if err != nil {
			d.Close()
			return nil, err
		}
		h := newHost(hc.Name, eng, localEngine(hc.Host))
		d.hosts = append(d.hosts, h)
		byName[hc.Name] = h
	}
	for _, ac := range cfg.Apps {
		h := d.hosts[0]
		if ac.Host != "" {
			h = byName[ac.Host]
		}
		d.known.Declare(ac.ID, newApp(ac.resolve(h.name), h))
	}
	d.followAll()
	return d, nil
}

// followAll starts one follower per engine and waits (bounded) for their first
// listing.
func (d *Driver) followAll() {
	for _, h := range d.hosts {
		d.wg.Add(1)
		go d.follow(h)
	}
	t := time.NewTimer(firstSyncWait)
	defer t.Stop()
	for _, h := range d.hosts {
		select {
		case <-h.firstSync:
		case <-t.C:
			d.log.Warn("docker engine not listed yet: its apps are unavailable until it answers", "engine", h.name)
		}
	}
}

// Observe returns what the driver knows of the app, from memory (kept fresh by the
// engines' event streams): it never waits on the network. An app that is neither
// declared nor discovered, or whose container is gone, gives paas.ErrNotFound (a
// declared app's with a paas.CauseError that names its container, and when it
// was removed); an app whose engine is unreachable gives paas.ErrUnavailable.
func (d *Driver) Observe(_ context.Context, pa paas.App) (paas.Observation, error) {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return paas.Observation{}, err
	}
	if err := a.h.unreachable(); err != nil {
		return paas.Observation{}, fmt.Errorf("docker: app %s: %w", a.spec.id, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.v == nil {
		return paas.Observation{}, a.missing()
	}
	obs := paas.Observation{Name: a.v.name, State: a.state()}
	if a.dep != nil {
		dep := *a.dep
		obs.Deployment = &dep
	}
	if a.exit != nil {
		e := *a.exit
		obs.Exit = &e
	}
	return obs, nil
}

// WaitReady pauses (false) or resumes (true) the readiness probes of the app's
// start in progress, or of the wait for a container started from outside
// (paas.ReadinessWaiter): reaper pauses them while the app is in Error. The
// container's events are still followed. It never blocks; an app with no such
// wait is left as it is.
func (d *Driver) WaitReady(pa paas.App, wait bool) {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return
	}
	a.mu.Lock()
	r := a.boot
	if r == nil {
		r = a.watch
	}
	a.mu.Unlock()
	switch {
	case r == nil:
	case wait:
		r.gate.Resume()
	case !r.gate.Paused():
		r.gate.Pause()
		d.log.Info("readiness probes paused: reaper no longer waits for the app (it is in Error)", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container)
	}
}

// Watch registers changed, called with an app's id each time its observation may
// have changed (started, ready, exited, stopped, paused, removed, discovered, its
// engine lost or found again), until ctx ends or the driver is closed. It returns
// at once. changed is called from the driver's goroutines, outside its locks, so
// it may call Observe; it must not block.
func (d *Driver) Watch(ctx context.Context, changed func(appID string)) {
	d.watchers.Add(ctx, changed)
}

// Close ends the event streams, probes and boots in progress, and waits for the
// driver's goroutines. It does not stop the containers: they keep running, and the
// next driver adopts them. Close is idempotent and returns nil.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.watchers.Close()
	d.cancel()
	d.wg.Wait()
	for _, h := range d.hosts {
		_ = h.eng.Close()
	}
	d.prober.Close()
	return nil
}

// lookup finds a declared or discovered app.
func (d *Driver) lookup(id string) (*app, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if a, ok := d.known.Lookup(id); ok {
		return a, nil
	}
	return nil, fmt.Errorf("docker: app %q is not in paas.docker.apps, and no container labelled %s=true claims it (%s=%s, or that name): %w",
		id, LabelEnable, LabelAppID, id, paas.ErrNotFound)
}

// apps returns every app, declared then discovered.
func (d *Driver) apps() []*app {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.known.All()
}

// reserve counts a goroutine that Close must wait for, before it is started. It
// returns false once the driver is closed.
func (d *Driver) reserve() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	return true
}

// notify tells every watcher that these apps' observations may have changed. It
// must be called without any lock held, since watchers may observe.
func (d *Driver) notify(ids ...string) { d.watchers.Notify(ids...) }

// since is time.Since rounded for logs.
func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// Owns reports whether the app is declared in paas.docker.apps or discovered
// from a container's labels (paas.Owner). A discovered app is owned from the
// moment its container is listed; until then, its id is unknown.
func (d *Driver) Owns(appID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.known.Owns(appID)
}

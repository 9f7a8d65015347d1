package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

var (
	_ paas.Client       = (*Driver)(nil)
	_ paas.Watcher      = (*Driver)(nil)
	_ paas.Owner        = (*Driver)(nil)
	_ paas.PolicyHinter = (*Driver)(nil)

	_ paas.ReadinessWaiter = (*Driver)(nil)
)

// Driver runs the configured apps as local processes. It is safe for concurrent use.
// Its goroutines are bounded: per running app, one that waits for the process to exit
// and, while the app starts, one that probes its readiness.
type Driver struct {
	log    *slog.Logger
	pidDir string
	key    string   // dataDirKey of the data directory, in the apps' markers
	lock   *os.File // the shared lock that tells StopApps a driver runs (lock_linux.go)
	probe  *probe.Prober
	apps   map[string]*app // fixed by New

	// base ends with Close: probes, waits and blocked Start/Stop calls end with it.
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // waiter and prober goroutines

	mu       sync.Mutex // guards what follows
	closed   bool
	watchers paas.Watchers
}

// app is one configured app and what the driver knows of it.
type app struct {
	spec spec

	mu    sync.Mutex // guards what follows
	state paas.State
	dep   *paas.Deployment // never modified once set: replaced
	proc  *proc            // the running process group, nil when none
	rss   int64            // the group's resident memory when last measured, bytes
	rssAt time.Time        // when
	boot  time.Duration    // spawn → ready, of the last start of ours
	exit  *paas.Exit       // its last exit by itself once ready (a crash)
}

// New returns a driver for opts.Apps. It starts no app, but adopts the apps a previous
// reaper left running (see the package doc): their readiness is probed once, so that
// Observe answers right away, and their exit is watched. Pid files that do not match a
// live process are removed; an app whose pid file is gone is adopted when its
// process is proven to be the one a driver started for this data directory and app
// (MarkerEnv). Nothing is ever signalled by New. It fails when the configuration is
// invalid (a conf.List of every problem), when DataDir cannot be used, with
// ErrStopping while StopApps runs on DataDir, or with ErrUnsupported.
func New(opts Options) (*Driver, error) {
	if opts.DataDir == "" {
		return nil, errors.New("process: Options.DataDir is required")
	}
	if err := validateAll(opts.Apps); err != nil {
		return nil, fmt.Errorf("process: invalid configuration:\n%w", err)
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return nil, fmt.Errorf("%w: pidfd_open: %v", ErrUnsupported, err)
	}
	_ = unix.Close(fd)
	pidDir := filepath.Join(opts.DataDir, "process")
	if err := os.MkdirAll(pidDir, 0o700); err != nil {
		return nil, fmt.Errorf("process: data directory: %w", err)
	}
	lock, err := lockShared(pidDir)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := &Driver{
		log:    logger,
		pidDir: pidDir,
		key:    dataDirKey(opts.DataDir),
		lock:   lock,
		probe:  probe.New(logger),
		apps:   make(map[string]*app, len(opts.Apps)),
	}
	d.base, d.cancel = context.WithCancel(context.Background())
	for i := range opts.Apps {
		c := &opts.Apps[i]
		d.apps[c.ID] = &app{spec: c.resolve(opts.DataDir, os.LookupEnv), state: paas.StateShouldBeDown}
	}
	d.adoptAll()
	return d, nil
}

// Observe returns what the driver knows of the app, from memory: it never blocks on
// I/O. An app that is not configured gives an error wrapping paas.ErrNotFound.
func (d *Driver) Observe(_ context.Context, pa paas.App) (paas.Observation, error) {
	a, err := d.lookup(pa)
	if err != nil {
		return paas.Observation{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	obs := paas.Observation{State: a.state, Name: a.spec.id}
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

// Start starts the app's process and returns once it is spawned, not when it is
// ready (watchers learn that). It is idempotent: on an app that is starting or
// running it does nothing. On an app being stopped it first waits (bounded by ctx)
// for the stop to finish, then starts it again. A command that cannot be executed
// (missing program, bad directory, log file that cannot be opened), or an app whose
// readiness probe passes before it runs (another program holds its port), gives an
// error wrapping paas.ErrStartFailed that names the port and, when /proc tells, the
// pid that holds it, and the app is observed down with a FAIL deployment; unless the
// program on the port is proven to be the app itself, started earlier by a driver on
// this data directory (MarkerEnv): it is then adopted, ready. Start blocks for at most one readiness probe and the spawn.
// An app that is not configured gives paas.ErrNotFound; a closed driver ErrClosed.
func (d *Driver) Start(ctx context.Context, pa paas.App) error {
	a, err := d.lookup(pa)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("process: start %s: %w", a.spec.id, err)
		}
		a.mu.Lock()
		p := a.proc
		var gone chan struct{}
		if p != nil {
			gone = p.gone
		}
		a.mu.Unlock()
		switch {
		case p == nil:
			if again, err := d.startNew(ctx, a); !again {
				return err
			}
		case !p.stopping && !p.exited:
			return nil
		default:
			// Being stopped, or its main process has exited and the rest of its
			// group is being cleaned up: start again once it is gone.
			select {
			case <-gone:
			case <-ctx.Done():
			case <-d.base.Done():
				return ErrClosed
			}
		}
	}
}

// startNew starts an app that has no process. It returns again when another call
// started one meanwhile.
func (d *Driver) startNew(ctx context.Context, a *app) (again bool, err error) {
	// If the app's readiness probe passes before the app runs, another program holds
	// its port: the probe would call the app ready at once, and the app would then
	// fail to listen. Unless that program is proven to be the app, started earlier
	// by a driver on this data directory, whose pid file is gone: it is adopted.
	// Probed and looked up outside the lock, so that Observe never waits on I/O.
	taken := d.probe.Ready(ctx, &a.spec.ready)
	var earlier *adoptable
	var who string
	if taken {
		earlier, who = d.proveHolder(a)
	}
	if err := ctx.Err(); err != nil {
		earlier.close()
		return false, fmt.Errorf("process: start %s: %w", a.spec.id, err)
	}
	a.mu.Lock()
	if a.proc != nil {
		a.mu.Unlock()
		earlier.close()
		return true, nil
	}
	switch {
	case earlier != nil:
		err = d.adoptHolder(a, earlier)
	case taken:
		err = d.failStart(a, time.Now(), a.spec.readyTarget()+" already answers before the app is started: another program holds its port"+who)
	default:
		err = d.spawn(a)
	}
	a.mu.Unlock()
	if !errors.Is(err, ErrClosed) {
		d.notify(a.spec.id)
	}
	return false, err
}

// Stop sends the app's stop signal to its whole process group, then SIGKILL to the
// group after its stop timeout, and returns once no process of the group is left
// alive, or when ctx ends (the stop carries on: a later Stop waits for the same one).
// It is idempotent: an app that is not running is left as it is. An app that is not
// configured gives paas.ErrNotFound; a closed driver ErrClosed.
func (d *Driver) Stop(ctx context.Context, pa paas.App) error {
	a, err := d.lookup(pa)
	if err != nil {
		return err
	}
	if d.isClosed() {
		return ErrClosed
	}
	a.mu.Lock()
	p := a.proc
	if p == nil {
		a.mu.Unlock()
		return nil
	}
	if !p.stopping {
		d.beginStop(a, p)
	}
	gone := p.gone
	a.mu.Unlock()
	select {
	case <-gone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("process: stop %s: %w", a.spec.id, ctx.Err())
	case <-d.base.Done():
		return ErrClosed
	}
}

// WaitReady pauses (false) or resumes (true) the readiness probes of the app's
// start in progress (paas.ReadinessWaiter): reaper pauses them while the app is
// in Error. A process that runs on unready is then left alone (reaper keeps its
// hands off an app in Error); its exit is still noticed, from its pidfd. It
// never blocks; an app that is not starting, or not configured, is left as it
// is, and its next start is probed as usual.
func (d *Driver) WaitReady(pa paas.App, wait bool) {
	a, err := d.lookup(pa)
	if err != nil {
		return
	}
	a.mu.Lock()
	p := a.proc
	a.mu.Unlock()
	if p == nil {
		return
	}
	if wait {
		p.gate.Resume()
	} else if !p.gate.Paused() {
		p.gate.Pause()
		d.log.Info("readiness probes paused: reaper no longer waits for the app (it is in Error)", "app", a.spec.id, "pid", p.pid)
	}
}

// Watch registers changed, called with an app's id each time its observation changes
// (started, ready, exited, stopped, failed to start), until ctx ends or the driver is
// closed. It returns at once. changed is called from the driver's goroutines, outside
// its locks, so it may call Observe; it must not block.
func (d *Driver) Watch(ctx context.Context, changed func(appID string)) {
	d.watchers.Add(ctx, changed)
}

// Close stops the driver's probes and watchers and waits for its goroutines. It does
// not stop the apps: they keep running and the next driver adopts them. A stop in
// progress still escalates to SIGKILL at its timeout. Close is idempotent and returns
// nil.
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
	for _, a := range d.apps {
		a.mu.Lock()
		if p := a.proc; p != nil {
			// Wakes the waiter blocked on the pidfd.
			_ = p.pidf.Close()
		}
		a.mu.Unlock()
	}
	d.wg.Wait()
	d.probe.Close()
	_ = d.lock.Close()
	return nil
}

// AppPolicy implements paas.PolicyHinter: the app's busy_url and busy_max of
// paas.apps[], from memory.
func (d *Driver) AppPolicy(pa paas.App) (paas.PolicyHint, error) {
	a, ok := d.apps[pa.ID]
	if !ok || a.spec.busyURL == "" {
		return paas.PolicyHint{}, nil
	}
	return paas.PolicyHint{BusyURL: a.spec.busyURL, BusyMax: a.spec.busyMax, BusyFrom: "config paas.apps[].busy_url"}, nil
}

func (d *Driver) lookup(pa paas.App) (*app, error) {
	a, ok := d.apps[pa.ID]
	if !ok {
		return nil, fmt.Errorf("process: app %q is not in paas.apps: %w", pa.ID, paas.ErrNotFound)
	}
	return a, nil
}

func (d *Driver) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// reserve counts n goroutines that Close must wait for, before they are started. It
// returns false, counting nothing, once the driver is closed, so that nothing is
// spawned that no goroutine would watch.
func (d *Driver) reserve(n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(n)
	return true
}

// notify tells every watcher that the app's observation changed. It must be called
// without any app lock held, since watchers may observe.
func (d *Driver) notify(id string) { d.watchers.Notify(id) }

// set records a transition; a.mu must be held. A nil dep keeps the last deployment.
func (a *app) set(state paas.State, dep *paas.Deployment) {
	a.state = state
	if dep != nil {
		a.dep = dep
	}
}

// since is time.Since rounded for logs.
func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// Owns reports whether the app is one of paas.apps (paas.Owner).
func (d *Driver) Owns(appID string) bool {
	_, ok := d.apps[appID]
	return ok
}

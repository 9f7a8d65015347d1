package reaper

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// The port: what a transport needs of the Engine, with no *plugin.Exchange and
// none of the Engine's unexported state. A transport claims an app for one of
// its routes and gets a Route, through which it reads the app's status, holds
// its callers until the app is up, counts its traffic and asks for wakes. HTTP
// is its first user (the reaper plugin holds its requests through its Route,
// heldrequest.go), a TCP route (package tcproute) the next: the same holds (one
// waiter loop per app, the same max_held and release pace), the same traffic
// counters (a connection open is a request in flight), the same coalesced wake
// asks (to the leader, in a cluster). porthold.go has the hold in its parts,
// portread.go what a transport reads of its app; the reaper plugin uses nothing
// else of the engine (pluginport_test.go).

// Why a hold ended without the app being up (Route.Hold).
var (
	// ErrAppFailed: the app is in Error (its start failed).
	ErrAppFailed = errors.New("reaper: the app failed to start")
	// ErrHoldTimeout: the app was not up before the caller's deadline (the
	// route's fail timeout).
	ErrHoldTimeout = errors.New("reaper: the app was not up within the fail timeout")
	// ErrTooManyHeld: the route's max_held callers are held for the app on this
	// node already, or the node's reaper.max_held.
	ErrTooManyHeld = errors.New("reaper: too many callers held for the app")
	// ErrShuttingDown: this node is shutting down.
	ErrShuttingDown = errors.New("reaper: this node is shutting down")
	// ErrCallerGone: the caller's context ended, or its hold was cancelled,
	// before the hold ended (Route.Wait).
	ErrCallerGone = errors.New("reaper: the caller went away while held")
)

// Route is a transport's claim on an app: one route that manages it. It is
// safe for concurrent use; Release withdraws the claim.
type Route struct {
	e          *Engine
	a          *app
	cfg        *Config
	routeID    string
	readyDelay time.Duration
}

// Claim makes the route routeID (named routeName) a manager of cfg.AppID, with
// cfg's policy (grace period, fail timeout, keep-up windows, max_held,
// ready_delay), which joins that of the app's other routes, HTTP or not. cfg
// must have been validated (Config.Validate) and must not change afterwards.
// A transport calls it once per route, when it starts listening.
func (e *Engine) Claim(routeID, routeName string, cfg *Config) *Route {
	return e.ClaimWith(routeID, routeName, cfg, nil)
}

// ClaimWith is Claim for a transport that keeps idle connections to the app
// open between its callers (HTTP's kept-alive connections to the route's
// backends): dropIdle, when not nil, closes them, and the engine calls it
// whenever the app stops or wakes, so that no caller released after a wake
// rides a connection that died with the app.
func (e *Engine) ClaimWith(routeID, routeName string, cfg *Config, dropIdle func()) *Route {
	e.Register(routeID, routeName, cfg, dropIdle)
	r := &Route{e: e, a: e.app(cfg.AppID), cfg: cfg, routeID: routeID, readyDelay: e.opts.readyDelay(cfg.AppID)}
	if cfg.ReadyDelay != nil {
		r.readyDelay = cfg.ReadyDelay.D()
	}
	return r
}

// Options are the options the engine was made with, defaults filled in (the
// budget of failed attempts at the admin token included: the engine's own when
// none was given). A transport reads what it needs of them once, when it
// claims its routes.
func (e *Engine) Options() EngineOptions { return e.opts }

// Stopping is closed once the node shuts down (Shutdown): a transport ends what
// it keeps open for its callers (a live progress stream), as the holds end.
func (e *Engine) Stopping() <-chan struct{} { return e.holds.stopping }

// TakeStream takes one of the node's places for a long-lived watcher of an
// app's progress (the waiting page's live stream), all apps together
// (EngineOptions.MaxLiveStreams); false when none is left. release gives it
// back; call it once.
func (e *Engine) TakeStream() (release func(), ok bool) {
	if e.live.Add(1) > int64(e.opts.MaxLiveStreams) {
		e.live.Add(-1)
		return nil, false
	}
	return func() { e.live.Add(-1) }, true
}

// Release withdraws the claim: the app's policy no longer counts this route's.
// Its traffic counters stay (as on a reload). Idempotent.
func (r *Route) Release() { r.e.Unregister(r.routeID, r.a.id, r.cfg) }

// AppID is the app the route manages.
func (r *Route) AppID() string { return r.a.id }

// Status is the app's last known status on this node; it never waits.
func (r *Route) Status() Status { return r.a.status() }

// AskWake asks for the app to be woken: stored, and passed to the leader's job,
// once per app per burst on this node (again every AskInterval while asked).
// It never waits.
func (r *Route) AskWake() { r.e.asks.ask(r.a, time.Now()) }

// AskWakeFrom is AskWake on behalf of a caller from client that found the app
// in status st, under the node's wake limits (EngineOptions.MaxWakesPerClient,
// MaxWakesPerMinute; wakelimit.go): when this caller would start the wake and
// a limit refuses it, nothing is asked, and it returns how long the client
// must wait, with limited true. It never waits.
func (r *Route) AskWakeFrom(client netip.Addr, st Status) (wait time.Duration, limited bool) {
	return r.e.askWake(r.a, st, client, time.Now())
}

// LookSoon tells the engine that the transport has a sign that the app, believed
// up, is not (a refused connection, the platform's "no instance" answer): the
// job is asked to observe it now, with a wake ask when wake is set (never for a
// caller that must not wake the app, a monitor), past the usual coalescing but
// at most once a second. It never waits.
func (r *Route) LookSoon(wake bool) { r.e.lookSoon(r.a, wake, time.Now()) }

// Hold waits until the app is up (and its ready delay passed), asking for its
// wake while it waits. It returns nil then, with done, which the caller must call
// once it knows whether the app took the caller (a dial that succeeded: ok): a
// crowd released at once is paced as HTTP requests are (release.go). It returns
// ErrAppFailed, ErrHoldTimeout (deadline passed), ErrTooManyHeld or
// ErrShuttingDown when the app is not up, and ctx's error when ctx ends first;
// done is then a no-op. It blocks until one of these.
func (r *Route) Hold(ctx context.Context, deadline time.Time) (done func(ok bool), err error) {
	start := time.Now()
	if r.a.status().Asleep() {
		r.AskWake()
	}
	end := r.Wait(ctx, deadline)
	r.ObserveHeld(start, end)
	noop := func(bool) {}
	switch {
	case end.Released:
		var given bool
		return func(ok bool) {
			if !given {
				given = true
				r.GiveBack(ok)
			}
		}, nil
	case end.Err == nil:
		return noop, nil
	case end.Err != ErrCallerGone:
		return noop, end.Err
	}
	if err := ctx.Err(); err != nil {
		return noop, err
	}
	return noop, context.Canceled
}

// Begin counts a unit of traffic (an open connection) until end is called, and
// reports false (with end already called) when the app went to sleep since the
// caller's hold: then hold again. While it runs the app is not put to sleep; end
// restarts the idle clock. The count is taken before the status is read, and
// the job writes the status before it reads the counts, so a stop and a
// connection never miss each other.
func (r *Route) Begin() (end func(), ok bool) {
	end, _, ok = r.Admit(false)
	return end, ok
}

// Admit is Begin that also returns the status it read once the caller was
// counted: a sleeping one when ok is false (the count is then undone already),
// for the transport to answer as for a sleeping app. A quiet caller (one that
// is not traffic: a poll, a monitor) keeps the app from being stopped under it
// as well, but its end does not restart the idle clock.
func (r *Route) Admit(quiet bool) (end func(), st Status, ok bool) {
	a := r.a
	if quiet {
		end = a.beginQuiet() // not marked used at a flush either (traffic.go)
	} else {
		end = a.begin()
	}
	if st = a.status(); st.Asleep() {
		end()
		return noEnd, st, false
	}
	return end, st, true
}

func noEnd() {}

// NoteAwake counts an admitted caller that moved the idle clock in the app's
// why-awake counters (awake.go, bounded and sampled): its client address, and
// what it asked for and with what, which what says (path, userAgent; either
// may be empty, what may be nil). what is called only for a caller that is
// counted: past the first few thousand since a wake, one in 16 is, and the
// others cost no more than an atomic add. It never waits.
func (r *Route) NoteAwake(client netip.Addr, what func() (path, userAgent string)) {
	r.a.awake.note(client, what)
}

// Touch records traffic now (bytes flowed on an open connection): the idle
// clock restarts. It never waits (an atomic store).
func (r *Route) Touch() { r.a.touch(time.Now()) }

// Refused tells the engine that the app, believed up, refused a connection: it
// crashed or was stopped outside reaper. The job observes it at once, with a wake
// asked; Refused waits (a few seconds at most, or until ctx ends) for the record
// to say it sleeps, or that it came up again since (a fast restart), and reports
// whether it does: then hold again.
func (r *Route) Refused(ctx context.Context) bool { return r.e.recheck(ctx, r.a, true) }

// Recheck is Refused for a caller that counts as held while it waits for the
// job's verdict (against max_held: ErrTooManyHeld when no place is left, and
// nothing is asked), with a wake asked only when wake is set (never for a
// monitor). It reports whether the app is now seen asleep, or up again since.
func (r *Route) Recheck(ctx context.Context, wake bool) (asleep bool, err error) {
	if !r.e.holds.take(r.a, r.cfg.MaxHeld) {
		return false, ErrTooManyHeld
	}
	defer r.e.holds.drop(r.a)
	return r.e.recheck(ctx, r.a, wake), nil
}

// Answered records that the app took its first caller since it woke (a held
// connection dialled): the wake's last phase (first_answer), once per wake on
// this node, in the history, the event stream and the metrics. It never waits.
func (r *Route) Answered() { r.e.wakeAnswered(r.a, time.Now()) }

// FailTimeout is the route's fail timeout (what bounds a hold).
func (r *Route) FailTimeout() time.Duration { return r.cfg.FailTimeout.D() }

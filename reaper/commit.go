package reaper

import "time"

// Apply installs a record read from the store (or just written by the job) as the
// node's view, and runs the features' hooks (beforeInstall, afterInstall), which
// release whoever waits on the app if it changed. Records of an older term or
// revision than the current view are ignored.
func (e *Engine) Apply(rec Record) {
	a := e.app(rec.AppID)
	if a == nil {
		return
	}
	e.apply(a, rec)
}

// apply installs rec as a's view, unless the view is as new or newer: the
// hooks of beforeInstall run before it is installed, those of afterInstall once
// it is, each list in its order. A record installed by another apply in between
// makes it start over (the hooks before may run twice; they are idempotent).
func (e *Engine) apply(a *app, rec Record) {
	for {
		cur := a.rec.Load()
		if cur != nil && (rec.Term < cur.Term || (rec.Term == cur.Term && rec.Revision < cur.Revision)) {
			return
		}
		if cur != nil && *cur == rec {
			return
		}
		c := change{cur: cur, rec: &rec}
		for _, hook := range beforeInstall {
			hook(e, a, c)
		}
		if a.rec.CompareAndSwap(cur, &rec) {
			for _, hook := range afterInstall {
				hook(e, a, c)
			}
			return
		}
	}
}

// change is one change of the node's view of an app, from cur (nil: none yet)
// to rec.
type change struct{ cur, rec *Record }

// applyHook is what one feature does at a change of the node's view of an app.
type applyHook func(e *Engine, a *app, c change)

// beforeInstall runs before the record is the node's view, in this order: the
// record releases whoever waits on the app (their requests go through, their
// ready delay counts), and what they find must be done before.
var beforeInstall = []applyHook{
	dropIdleConns, // no released request rides a connection that died with the app
	noteUpSeen,    // a waiter that sees Up sees when this node saw it come up
}

// afterInstall runs once the record is the node's view, in this order. Whatever
// a released waiter causes (a wake's first answer, told as an event) must come
// after what the change itself tells: releaseWaiters is the last but one.
var afterInstall = []applyHook{
	startAwakeClock, // why awake (awake.go) counts from when this node saw it come up
	countBoot,       // the learned ETA (eta.go)
	streamChange,    // the event stream (events.go), before the waiters it releases
	tellReadiness,   // the driver's readiness probe (boots.go)
	restartAsks,     // a new status: the wake asks' pace starts over (wakeask.go)
	releaseWaiters,  // held requests, waiting pages' live progress (hold.go, liveevents.go)
	countsForStop,   // last: nothing waits on it, it only kicks a flush (traffic.go)
}

// statusChanged reports whether the app's status changed (or is the first known).
func (c change) statusChanged() bool { return c.cur == nil || c.cur.Status != c.rec.Status }

// cameUp reports whether the app is Up now and was not (or was not known).
func (c change) cameUp() bool {
	return c.rec.Status == StatusUp && (c.cur == nil || c.cur.Status != StatusUp)
}

// dropIdleConns: the app stops or wakes, so a connection kept idle across its
// sleep may be dead without this side knowing, and a request whose body cannot
// be sent again would fail on it. Dropped before the record that releases held
// requests, so that none rides one.
func dropIdleConns(e *Engine, a *app, c change) {
	if c.cur != nil && (c.cur.Status == StatusUp) != (c.rec.Status == StatusUp) {
		e.dropIdle(a)
	}
}

// noteUpSeen: the ready delay counts from when this node saw the app come up, on
// its own clock (another node's clock may be off); set before the record, so
// that a waiter that sees Up sees this too.
func noteUpSeen(_ *Engine, a *app, c change) {
	if !c.cameUp() {
		return
	}
	seen := time.Now()
	if c.cur == nil {
		seen = c.rec.LastUpAt // known already up when this node started
	}
	a.upSeen.Store(seen.UnixNano())
}

// startAwakeClock starts why-awake's count over when the app comes up.
func startAwakeClock(_ *Engine, a *app, c change) {
	if c.cameUp() {
		a.awake.reset(time.Unix(0, a.upSeen.Load()))
	}
}

// countBoot learns the boot of a wake that brought the app up.
func countBoot(_ *Engine, a *app, c change) {
	if c.cameUp() {
		a.learnBoot(c.rec)
	}
}

// streamChange publishes what the record shows changed: its status, its hold.
func streamChange(e *Engine, _ *app, c change) {
	if c.cur != nil {
		e.recordEvents(c.cur, c.rec)
	}
}

// tellReadiness tells the driver whether to probe the app (Error or not).
func tellReadiness(e *Engine, _ *app, c change) { e.followReadiness(c.cur, c.rec) }

// restartAsks lets the next request ask for a wake at once after a change of
// status.
func restartAsks(e *Engine, a *app, c change) {
	if c.statusChanged() {
		e.asks.restart(a)
	}
}

// releaseWaiters wakes whoever waits for a change of the app: held requests
// and, since they follow a wake's phases too, the waiting pages' live progress.
func releaseWaiters(_ *Engine, a *app, c change) {
	if !c.statusChanged() && sameWake(c.cur.Wake, c.rec.Wake) {
		return
	}
	a.notifyMu.Lock()
	close(a.notify)
	a.notify = make(chan struct{})
	a.notifyMu.Unlock()
}

// countsForStop: the leader will re-check traffic before it stops the app, so
// this node's counts are made fresh for it.
func countsForStop(e *Engine, _ *app, c change) {
	if c.statusChanged() && c.rec.Status == StatusWaitingForShutdown {
		e.kickFlush()
	}
}

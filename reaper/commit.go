package reaper

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// One path for "a record changed". Both writers of records, the leader's job
// (Job.write, step.go) and an operator's action (Engine.Change,
// portoperator.go, which the admin API's actions go through), commit: write,
// tell, apply, in that order. Every node
// applies the records the store brings (Apply: its watch, its polls) through
// the same hooks, in the order of beforeInstall and afterInstall. One tell
// feeds the event stream (events.go), the history and the webhooks (notify.go).

// commit writes next, the app's record that replaces prev, through the
// writer's store (the writer holds the app's lock); next gets the next
// revision. Once it is written:
//
//  1. what the write changed is told from this node (tellWritten), with the
//     action that made it (an operator's; nil: none);
//  2. it becomes this node's view (apply), which releases whoever waits on
//     the app: what they cause (a wake's first answer, told by the request
//     that got it) comes after the change that caused it.
//
// While it runs, the records of the app that the store's watch or a poll
// bring are set aside, and applied after it (commitGate): one of them may be
// this very write, whose apply would release the waiters before the change is
// told.
//
// What is told is told whatever happens to ctx once the record is written (a
// change that happened is not lost to the webhooks because the client hung up
// or the lock was lost right after the write), within tellTimeout. A write
// that failed is neither told nor applied; its error is returned.
func (e *Engine) commit(ctx context.Context, store RecordStore, prev Record, next *Record, action *Transition) error {
	// Each write gets the next revision, by which nodes order the records they
	// see whatever the clocks say.
	next.Revision = prev.Revision + 1
	a := e.app(next.AppID)
	if a != nil {
		a.commits.begin()
		defer func() {
			if aside := a.commits.end(); aside != nil {
				e.apply(a, *aside)
			}
		}()
	}
	if err := store.PutRecord(ctx, *next); err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tellTimeout)
	e.tellWritten(tctx, prev, *next, action)
	cancel()
	if a != nil {
		e.apply(a, *next)
	}
	return nil
}

// tellWritten tells, from this node, what its write of the app's record
// changed from prev to next, in this order: its status (to the webhooks: the
// store wrote the history entry with the record, and every node streams it as
// it applies it), a hold that ran out by itself since the last look, and the
// action that made the write (nil: none).
func (e *Engine) tellWritten(ctx context.Context, prev, next Record, action *Transition) {
	if prev.Status != next.Status {
		t := statusTransition(&prev, &next)
		t.Node = e.opts.Node
		e.tell(ctx, t, next.Name, 0, toWebhooks)
	}
	if h := holdExpired(prev, next); h != nil {
		t := Transition{AppID: next.AppID, From: next.Status, To: next.Status, Cause: "hold expired", At: h.Until,
			Kind: EventHoldExpired, By: h.By, Node: e.opts.Node, Hold: h}
		e.tell(ctx, t, next.Name, 0, toHistory|toWebhooks)
	}
	if action != nil {
		e.tellAction(ctx, *action, next.Name)
	}
}

// tellAction tells an operator's action on this node (of the app named name):
// to the history and the webhooks, and to the event stream unless the record
// shows it (a hold, its release: every node streams them as it applies them).
func (e *Engine) tellAction(ctx context.Context, t Transition, name string) {
	t.Node = e.opts.Node
	to := toHistory | toWebhooks
	if t.Kind != EventHold && t.Kind != EventRelease {
		to |= toStream
	}
	e.tell(ctx, t, name, 0, to)
}

// tellTimeout bounds what the store is told of one change (its history, the
// webhooks' queues), once it happened.
const tellTimeout = 5 * time.Second

// audience is whom tell tells.
type audience uint8

const (
	toStream   audience = 1 << iota // this node's event stream (events.go); never waits
	toHistory                       // the app's history, in the store
	toWebhooks                      // the Notifier (notify.go); waits until the event is queued
)

// tell tells t, of the app named name, to its audience, in this order: the
// event stream (with seconds: how long the previous status lasted, or the
// wake took), the history, the webhooks. A history that cannot be written is
// logged, not fatal: what it tells was done.
func (e *Engine) tell(ctx context.Context, t Transition, name string, seconds float64, to audience) {
	if to&toStream != 0 {
		e.events.publish(t, seconds)
	}
	if to&toHistory != 0 {
		if err := e.store.AddEvent(ctx, t); err != nil {
			e.storeErr.log(e.log, "adding an event to an app's history failed", fmt.Errorf("%s (%s): %w", t.AppID, t.Kind, err))
		}
	}
	if to&toWebhooks != 0 && e.opts.Notifier != nil {
		e.opts.Notifier.Notify(ctx, t, name)
	}
}

// commitGate keeps the records of an app that the store brings out of the
// node's view while this node commits the app: the newest is applied after.
type commitGate struct {
	mu      sync.Mutex
	running int     // this node's commits of the app under way
	aside   *Record // the newest record set aside meanwhile
}

func (g *commitGate) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running++
}

// end returns the record to apply now that the last commit under way ended,
// nil if none.
func (g *commitGate) end() *Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	if g.running > 0 {
		return nil
	}
	aside := g.aside
	g.aside = nil
	return aside
}

// setAside keeps rec for after the commits under way, and reports whether
// there are any (false: apply it now).
func (g *commitGate) setAside(rec Record) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running == 0 {
		return false
	}
	if g.aside == nil || rec.Term > g.aside.Term || (rec.Term == g.aside.Term && rec.Revision >= g.aside.Revision) {
		g.aside = &rec
	}
	return true
}

// Apply installs a record read from the store as the node's view, and runs the
// features' hooks (beforeInstall, afterInstall), which release whoever waits on
// the app if it changed. Records of an older term or revision than the current
// view are ignored. While this node commits the app, the record is set aside
// and applied after the commit.
func (e *Engine) Apply(rec Record) {
	a := e.app(rec.AppID)
	if a == nil || a.commits.setAside(rec) {
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

package reaper

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// Wake asks and held requests. A burst of requests on a sleeping app makes one ask
// per node, asked again every AskInterval while requests wait. Held requests wait on
// a channel that the node closes when the app's record changes, so they are released
// the moment the app is up; one waiter loop per app re-reads the record from the
// store as a fallback and repeats the ask, however many requests wait.

// askWake asks for the app to be woken, unless this node asked less than
// AskInterval ago. The ask is stored, then passed to the Asker, in the background:
// the request never waits on it.
func (e *Engine) askWake(a *app, now time.Time) {
	last := a.lastAsk.Load()
	if now.UnixNano()-last < int64(e.opts.AskInterval) || !a.lastAsk.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go e.sendAsk(a, now)
}

// askSoon asks for a wake past the usual coalescing, but at most once a second:
// a refused connection or a platform's "no instance" answer is a sign that the
// app is down, and a burst of them must still make few asks.
func (e *Engine) askSoon(a *app, now time.Time) {
	if last := a.lastAsk.Load(); now.UnixNano()-last >= int64(time.Second) {
		a.lastAsk.CompareAndSwap(last, 0)
	}
	e.askWake(a, now)
}

// lookSoon asks the job to observe the app, without a wake ask, at most once a
// second: for requests that must never wake an app (monitors).
func (e *Engine) lookSoon(a *app, now time.Time) {
	last := a.lastLook.Load()
	if now.UnixNano()-last < int64(time.Second) || !a.lastLook.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if box := e.asker.Load(); box != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = box.Ask(ctx, a.id)
		}()
	}
}

// sendAsk stores the ask, then passes it to the Asker. An ask the store did not
// keep does not count as made (the job cannot act on it while the store is down):
// the next request asks again at once.
func (e *Engine) sendAsk(a *app, at time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stored := true
	if err := e.store.AskWake(ctx, a.id, at, e.opts.AskTTL); err != nil {
		stored = false
		e.storeErr.log(e.log, "storing a wake ask failed; passing it to the job directly", err)
	}
	if box := e.asker.Load(); box != nil {
		if err := box.Ask(ctx, a.id); err != nil {
			e.askErr.log(e.log, "passing a wake ask to the job failed; a stored ask waits for its next pass", fmt.Errorf("%s: %w", a.id, err))
		}
	}
	if !stored {
		a.lastAsk.CompareAndSwap(at.UnixNano(), 0)
	}
}

// Bodies of held requests read into memory: at most heldBodyLimit each, and
// heldBodyBudget for the whole node.
const (
	heldBodyLimit  = 64 << 10
	heldBodyBudget = 64 << 20
)

// reserveBody takes n bytes of the node's budget for held bodies, if it has them.
func (e *Engine) reserveBody(n int64) bool {
	if e.heldBodies.Add(n) > heldBodyBudget {
		e.heldBodies.Add(-n)
		return false
	}
	return true
}

func (e *Engine) releaseBody(n int64) { e.heldBodies.Add(-n) }

// holdResult is how a hold ended.
type holdResult int

const (
	holdReleased holdResult = iota // the app is up (and its ready delay passed)
	holdFailed                     // the app went to Error
	holdTimedOut                   // the fail timeout passed
	holdGone                       // the client went away
	holdTooMany                    // max_held reached on this node
	holdShutdown                   // this node is shutting down
	holdParked                     // the request waits off its goroutine (plugin.ErrParked)
)

// A holder is one request waiting for its app. The app's waiter loop, its deadline
// timer, the node's shutdown or the request's end (cancelHold) settles it, once.
type holder struct {
	readyDelay time.Duration
	deadline   time.Time
	timer      *time.Timer      // fires at the request's deadline
	done       func(holdResult) // told how the hold ended; never called under a lock
	settled    bool             // under app.holdMu
}

// startHold makes the request wait for the app: until it is up plus readyDelay, in
// Error, past deadline, or until the node shuts down. When the outcome is known
// at once (the app is ready already, max_held is reached, the node is shutting
// down) it returns it and a nil holder. Otherwise done is called later, exactly
// once, from another goroutine — unless cancelHold returns true first. The request
// counts as held until then.
func (e *Engine) startHold(a *app, maxHeld int, readyDelay time.Duration, deadline time.Time, done func(holdResult)) (*holder, holdResult) {
	select {
	case <-e.stopping:
		return nil, holdShutdown
	default:
	}
	now := time.Now()
	if res, ok := holdOutcome(a.rec.Load(), a.upSeen.Load(), readyDelay, deadline, now); ok {
		return nil, res
	}
	if !now.Before(deadline) {
		return nil, holdTimedOut
	}
	if !e.takeHeld(a, maxHeld) {
		return nil, holdTooMany
	}
	h := &holder{readyDelay: readyDelay, deadline: deadline, done: done}
	a.holdMu.Lock()
	if a.holders == nil {
		a.holders = make(map[*holder]struct{})
	}
	a.holders[h] = struct{}{}
	h.timer = time.AfterFunc(time.Until(deadline), func() {
		if e.cancelHold(a, h) {
			h.done(holdTimedOut)
		}
	})
	a.holdMu.Unlock()
	// The waiter loop may have taken its last look before the holder was added:
	// shutting down, or the app ready meanwhile.
	select {
	case <-e.stopping:
		if e.cancelHold(a, h) {
			return nil, holdShutdown
		}
	default:
	}
	a.poke()
	if a.waiting.CompareAndSwap(false, true) {
		go e.waiterLoop(a)
	}
	return h, 0
}

// cancelHold withdraws a holder; false means it was settled already (its done
// was or is being called).
func (e *Engine) cancelHold(a *app, h *holder) bool {
	a.holdMu.Lock()
	if h.settled {
		a.holdMu.Unlock()
		return false
	}
	h.settled = true
	delete(a.holders, h)
	a.holdMu.Unlock()
	h.timer.Stop()
	e.dropHeld(a)
	return true
}

// takeHeld counts one more request held for a, unless that would pass maxHeld
// for the app or the node's bound.
func (e *Engine) takeHeld(a *app, maxHeld int) bool {
	if a.held.Add(1) > int64(maxHeld) {
		a.held.Add(-1)
		return false
	}
	if n := e.held.Add(1); e.opts.MaxHeld > 0 && n > int64(e.opts.MaxHeld) {
		e.held.Add(-1)
		a.held.Add(-1)
		e.heldFull.log(e.log, "a request was not held: this node holds reaper.max_held requests already", fmt.Errorf("reaper.max_held is %d (app %s)", e.opts.MaxHeld, a.id))
		return false
	}
	return true
}

// dropHeld counts one request less held for a.
func (e *Engine) dropHeld(a *app) {
	a.held.Add(-1)
	e.held.Add(-1)
}

// holdOutcome says how a hold ends given the app's record, when it ends now:
// released when the app is up and readyDelay has passed since this node saw it
// come up; failed when it is in Error, or timed out if the hold's deadline passed
// first. (The job puts an app that did not wake in time in Error one fail timeout
// after the wake began, which is at or after the deadline of the request that
// asked for it: that request's answer is the timeout, whichever of the record and
// the timer this node sees first.)
func holdOutcome(rec *Record, upSeen int64, readyDelay time.Duration, deadline, now time.Time) (holdResult, bool) {
	switch {
	case rec == nil:
	case rec.Status == StatusUp:
		if !now.Before(time.Unix(0, upSeen).Add(readyDelay)) {
			return holdReleased, true
		}
	case rec.Status == StatusError:
		if !now.Before(deadline) {
			return holdTimedOut, true
		}
		return holdFailed, true
	}
	return 0, false
}

// settleHolders ends the holds whose outcome is known: all of them when shutting
// down, the ready ones when the app is up, all of them when it is in Error. It
// returns when the next holder will be ready (zero if none waits for that).
func (e *Engine) settleHolders(a *app, now time.Time, shutdown bool) (next time.Time) {
	rec := a.rec.Load()
	if !shutdown && (rec == nil || (rec.Status != StatusUp && rec.Status != StatusError)) {
		return time.Time{} // asleep: nothing to settle, however many wait
	}
	upSeen := a.upSeen.Load()
	type ended struct {
		h   *holder
		res holdResult
	}
	var out []ended
	a.holdMu.Lock()
	for h := range a.holders {
		res, ok := holdShutdown, true
		if !shutdown {
			res, ok = holdOutcome(rec, upSeen, h.readyDelay, h.deadline, now)
		}
		if !ok {
			if at := time.Unix(0, upSeen).Add(h.readyDelay); next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		h.settled = true
		delete(a.holders, h)
		out = append(out, ended{h, res})
	}
	a.holdMu.Unlock()
	for _, x := range out {
		x.h.timer.Stop()
		e.dropHeld(a)
		x.h.done(x.res)
	}
	return next
}

// hold waits on the caller's goroutine until the hold ends or ctx does (holdGone).
func (e *Engine) hold(ctx context.Context, a *app, maxHeld int, readyDelay time.Duration, deadline time.Time) holdResult {
	ch := make(chan holdResult, 1)
	h, res := e.startHold(a, maxHeld, readyDelay, deadline, func(r holdResult) { ch <- r })
	if h == nil {
		return res
	}
	return e.awaitHold(ctx, a, h, ch)
}

// awaitHold waits for the result of h, sent on ch, or for ctx to end.
func (e *Engine) awaitHold(ctx context.Context, a *app, h *holder, ch <-chan holdResult) holdResult {
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		if e.cancelHold(a, h) {
			return holdGone
		}
		return <-ch
	}
}

// parkedHold is the hold of a request that may be parked (plugin.Exchange.Park):
// its result resumes the parked request, which reads it when the gateway runs the
// plugin again; a request that could not be parked after all waits on ch.
type parkedHold struct {
	ch chan holdResult // capacity 1

	mu      sync.Mutex
	pk      *plugin.Parked
	res     holdResult
	settled bool
}

func newParkedHold() *parkedHold { return &parkedHold{ch: make(chan holdResult, 1)} }

// settle is the holder's done function.
func (ph *parkedHold) settle(r holdResult) {
	ph.mu.Lock()
	ph.res, ph.settled = r, true
	pk := ph.pk
	ph.mu.Unlock()
	if pk != nil {
		pk.Resume() // false only when the client left: nobody to answer
		return
	}
	ph.ch <- r
}

// park attaches the parked request, resuming it at once if the hold ended already.
func (ph *parkedHold) park(pk *plugin.Parked) {
	ph.mu.Lock()
	ph.pk = pk
	settled := ph.settled
	ph.mu.Unlock()
	if settled {
		pk.Resume()
	}
}

func (ph *parkedHold) result() holdResult {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.res
}

// waiterLoop runs while requests are held for the app: it settles their holds
// when the app's record changes (or a holder's ready delay passes), re-reads the
// record at the poll interval (in case a notification was missed) and asks for a
// wake again every AskInterval while the app sleeps.
func (e *Engine) waiterLoop(a *app) {
	poll := time.NewTicker(e.opts.PollInterval)
	defer poll.Stop()
	ready := time.NewTimer(time.Hour)
	ready.Stop()
	defer ready.Stop()
	for {
		ch := a.changed() // before reading the record, so no change is missed
		if next := e.settleHolders(a, time.Now(), false); !next.IsZero() {
			ready.Reset(time.Until(next))
		}
		select {
		case <-ch:
		case <-a.poked:
		case <-ready.C:
		case <-e.stopping:
			e.settleHolders(a, time.Now(), true)
			a.waiting.Store(false)
			return
		case <-poll.C:
			if a.held.Load() == 0 {
				a.waiting.Store(false)
				// A request may have started holding between the check and the
				// store: it saw waiting true and started no loop, so take over again.
				if a.held.Load() == 0 || !a.waiting.CompareAndSwap(false, true) {
					return
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), e.opts.PollInterval)
			e.refreshOne(ctx, a.id)
			cancel()
			if a.status().Asleep() {
				e.askWake(a, time.Now())
			}
		}
	}
}

// poke wakes the app's waiter loop (a holder was added).
func (a *app) poke() {
	select {
	case a.poked <- struct{}{}:
	default:
	}
}

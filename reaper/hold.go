package reaper

import (
	"context"
	"fmt"
	"time"
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
)

// hold waits until the app is up plus readyDelay, in Error, past deadline, or until
// ctx ends. It counts as a held request for as long as it waits.
func (e *Engine) hold(ctx context.Context, a *app, maxHeld int, readyDelay time.Duration, deadline time.Time) holdResult {
	select {
	case <-e.stopping:
		return holdShutdown
	default:
	}
	if a.held.Add(1) > int64(maxHeld) {
		a.held.Add(-1)
		return holdTooMany
	}
	defer a.held.Add(-1)
	if a.waiting.CompareAndSwap(false, true) {
		go e.waiterLoop(a)
	}
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	var ready *time.Timer
	defer func() {
		if ready != nil {
			ready.Stop()
		}
	}()
	for {
		ch := a.changed() // before reading the record, so no change is missed
		var readyC <-chan time.Time
		rec := a.rec.Load()
		switch {
		case rec == nil:
		case rec.Status == StatusUp:
			wait := time.Until(time.Unix(0, a.upSeen.Load()).Add(readyDelay))
			if wait <= 0 {
				return holdReleased
			}
			if ready == nil {
				ready = time.NewTimer(wait)
			} else {
				ready.Reset(wait)
			}
			readyC = ready.C
		case rec.Status == StatusError:
			return holdFailed
		}
		select {
		case <-ch:
		case <-readyC:
			return holdReleased
		case <-timeout.C:
			return holdTimedOut
		case <-ctx.Done():
			return holdGone
		case <-e.stopping:
			return holdShutdown
		}
	}
}

// waiterLoop runs while requests are held for the app: it re-reads the record at
// the poll interval (in case a notification was missed) and asks for a wake again
// every AskInterval while the app sleeps.
func (e *Engine) waiterLoop(a *app) {
	t := time.NewTicker(e.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-e.stopping:
			a.waiting.Store(false)
			return
		}
		if a.held.Load() == 0 {
			a.waiting.Store(false)
			// A request may have started holding between the check and the store:
			// it saw waiting true and started no loop, so take over again.
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

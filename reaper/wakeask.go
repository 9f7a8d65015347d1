package reaper

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Asker is where a node's wake asks go once stored: the local job on a single node
// or on the leader, the leader's internal API elsewhere. Ask must not block for long
// (it is bounded by ctx) and may fail: the stored ask is then handled by the job's
// next pass.
type Asker interface {
	Ask(ctx context.Context, appID string) error
}

// wakeAsks sends this node's wake asks. A burst of requests on a sleeping app makes
// one ask per node, asked again every interval while requests wait. An ask is
// stored first (the job finds it at its next pass even if the call to it is lost),
// then passed to the Asker. Nothing here makes a request wait: the store write and
// the call run in the background.
type wakeAsks struct {
	store    AskStore
	asker    atomic.Pointer[askerBox]
	interval time.Duration // between two asks for one app, while requests wait
	ttl      time.Duration // of a stored ask
	log      *slog.Logger
	storeErr throttle
	askErr   throttle
}

type askerBox struct{ Asker }

// appAsks is one app's side of wakeAsks: when this node last asked.
type appAsks struct {
	lastAsk  atomic.Int64 // unix nanoseconds of the last wake ask
	lastLook atomic.Int64 // unix nanoseconds of the last look asked without a wake
}

// setAsker sets where asks go; until it is set, asks are only stored.
func (w *wakeAsks) setAsker(a Asker) { w.asker.Store(&askerBox{a}) }

// ask asks for the app to be woken, unless this node asked less than interval
// ago.
func (w *wakeAsks) ask(a *app, now time.Time) {
	if _, ok := w.claim(a, now); ok {
		go w.send(a, now)
	}
}

// claim takes the app's next ask at now, as ask does, without sending it; it
// returns false when this node asked less than interval ago. The caller sends
// the ask (send), or gives it back with unclaim and the time claim returned.
func (w *wakeAsks) claim(a *app, now time.Time) (prev int64, ok bool) {
	last := a.lastAsk.Load()
	if now.UnixNano()-last < int64(w.interval) || !a.lastAsk.CompareAndSwap(last, now.UnixNano()) {
		return 0, false
	}
	return last, true
}

// unclaim gives back an ask claimed at now and never sent: the next request
// may ask at once.
func (w *wakeAsks) unclaim(a *app, prev int64, now time.Time) {
	a.lastAsk.CompareAndSwap(now.UnixNano(), prev)
}

// askSoon asks for a wake past the usual coalescing, but at most once a second:
// a refused connection or a platform's "no instance" answer is a sign that the
// app is down, and a burst of them must still make few asks.
func (w *wakeAsks) askSoon(a *app, now time.Time) {
	if last := a.lastAsk.Load(); now.UnixNano()-last >= int64(time.Second) {
		a.lastAsk.CompareAndSwap(last, 0)
	}
	w.ask(a, now)
}

// askNow asks for a wake whenever this node last asked: an operator's ask is
// never coalesced away.
func (w *wakeAsks) askNow(a *app, now time.Time) {
	a.lastAsk.Store(0)
	w.ask(a, now)
}

// restart forgets the app's last ask: asks are coalesced within one sleep, and a
// new status starts afresh, so that a request right after the app went back to
// sleep asks at once rather than waiting out the previous ask's interval.
func (w *wakeAsks) restart(a *app) { a.lastAsk.Store(0) }

// lookSoon asks the job to observe the app, without a wake ask, at most once a
// second: for requests that must never wake an app (monitors).
func (w *wakeAsks) lookSoon(a *app, now time.Time) {
	last := a.lastLook.Load()
	if now.UnixNano()-last < int64(time.Second) || !a.lastLook.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.look(ctx, a.id)
	}()
}

// lookSoon asks the job to observe the app soon (Route.LookSoon): with a wake
// ask past the usual coalescing when wake is set (askSoon), else without one.
func (e *Engine) lookSoon(a *app, wake bool, now time.Time) {
	if wake {
		e.asks.askSoon(a, now)
	} else {
		e.asks.lookSoon(a, now)
	}
}

// look asks the job to observe the app now, without a wake ask, and waits for the
// Asker (bounded by ctx). Whether it got there does not matter: the job looks at
// every app at its next pass anyway.
func (w *wakeAsks) look(ctx context.Context, appID string) {
	if box := w.asker.Load(); box != nil {
		_ = box.Ask(ctx, appID)
	}
}

// send stores the ask, then passes it to the Asker. An ask the store did not keep
// does not count as made (the job cannot act on it while the store is down): the
// next request asks again at once.
func (w *wakeAsks) send(a *app, at time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stored := true
	if err := w.store.AskWake(ctx, a.id, at, w.ttl); err != nil {
		stored = false
		w.storeErr.log(w.log, "storing a wake ask failed; passing it to the job directly", err)
	}
	if box := w.asker.Load(); box != nil {
		if err := box.Ask(ctx, a.id); err != nil {
			w.askErr.log(w.log, "passing a wake ask to the job failed; a stored ask waits for its next pass", fmt.Errorf("%s: %w", a.id, err))
		}
	}
	if !stored {
		a.lastAsk.CompareAndSwap(at.UnixNano(), 0)
	}
}

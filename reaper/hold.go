package reaper

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// holds keeps the requests that wait on this node for their apps to wake. Each
// held request is a registration (a holder) that exactly one of these settles:
// its app's waiter loop (the record changed, or the request's ready delay
// passed), a timer at the request's deadline, the node's shutdown, or the
// request's end (cancel). Held requests wait on nothing of their own: one waiter
// loop per app runs while any wait, however many they are, and releases them the
// moment the app's record says it is up — oldest first, through the app's release
// window (release.go), at the pace the app answers.
type holds struct {
	// lookout re-reads an app's record and asks again for its wake, at every
	// pollInterval while requests wait, in case a notification was missed.
	lookout      lookout
	pollInterval time.Duration
	// maxHeld bounds the requests held on this node, all apps together (each
	// app is also bounded by its routes' max_held); 0 means no bound.
	maxHeld int
	// crowdedAbove: past this many held requests on the node, a released
	// request's connection closes after its answer (defaultCrowdedAbove).
	crowdedAbove int64
	crowdGC      crowdGC // the garbage collector's target while a crowd is held
	log          *slog.Logger

	held     atomic.Int64 // requests held on this node, all apps
	full     throttle     // logs that maxHeld was reached
	bodies   atomic.Int64 // bytes of held requests' bodies in memory
	stopping chan struct{}
	stopOnce sync.Once
}

// lookout is what the holds of an app need from the engine while they wait: a
// fresh look at the app (its record re-read from the store, and a wake asked
// again if it still sleeps).
type lookout interface {
	lookAgain(a *app)
}

// appHolds is one app's side of holds.
type appHolds struct {
	held    atomic.Int64  // requests waiting for the app, and refused requests waiting for the job's verdict
	waiting atomic.Bool   // the waiter loop runs
	poked   chan struct{} // capacity 1: wakes the waiter loop

	holdMu  sync.Mutex
	queue   holdQueue     // the requests held on this node, oldest first
	release releaseWindow // the pace of their release
}

func newHolds(l lookout, pollInterval time.Duration, maxHeld int, log *slog.Logger) *holds {
	return &holds{lookout: l, pollInterval: pollInterval, maxHeld: maxHeld, crowdedAbove: defaultCrowdedAbove,
		log: log, stopping: make(chan struct{})}
}

// shutdown settles every hold at once (holdShutdown) and refuses new ones.
// Idempotent.
func (h *holds) shutdown() { h.stopOnce.Do(func() { close(h.stopping) }) }

// holdResult is how a hold ended.
type holdResult int

const (
	holdReleased holdResult = iota // the app is up (and its ready delay passed); a place of its release window is taken
	holdReady                      // the app was ready when the request came, and nothing waited before it
	holdFailed                     // the app went to Error
	holdTimedOut                   // the fail timeout passed
	holdGone                       // the client went away
	holdTooMany                    // max_held reached on this node
	holdShutdown                   // this node is shutting down
)

// A holder is one request waiting for its app.
type holder struct {
	readyDelay  time.Duration
	failTimeout time.Duration // the request's route's: it is held until deadline, arrival + failTimeout
	deadline    time.Time
	timer       *time.Timer // fires at the request's deadline
	// done is told how the hold ended, and the app's record it ended on (the
	// held requests that end together are answered from the same record, so
	// that they all get the same answer); never called under a lock.
	done       func(holdResult, *Record)
	settled    bool    // under appHolds.holdMu
	prev, next *holder // in appHolds.queue, under appHolds.holdMu
}

// start makes the request wait for the app: until it is up plus readyDelay, in
// Error, past deadline (its arrival plus its route's failTimeout), or until the
// node shuts down. When the outcome is known
// at once (the app is ready already, max_held is reached, the node is shutting
// down) it returns it and a nil holder. Otherwise done is called later, exactly
// once, from another goroutine — unless cancel returns true first. The request
// counts as held until then.
func (h *holds) start(a *app, maxHeld int, readyDelay, failTimeout time.Duration, deadline time.Time, done func(holdResult, *Record)) (*holder, holdResult, *Record) {
	select {
	case <-h.stopping:
		return nil, holdShutdown, nil
	default:
	}
	now := time.Now()
	rec := a.rec.Load()
	if res, ok := holdOutcome(rec, a.upSeen.Load(), readyDelay, now); ok {
		if res != holdReleased {
			return nil, res, rec
		}
		a.holdMu.Lock()
		queued := a.queue.head != nil
		a.holdMu.Unlock()
		if !queued {
			return nil, holdReady, rec
		}
		// Others wait to be released: this one waits behind them.
	}
	if !now.Before(deadline) {
		return nil, holdTimedOut, rec
	}
	if !h.take(a, maxHeld) {
		return nil, holdTooMany, rec
	}
	r := &holder{readyDelay: readyDelay, failTimeout: failTimeout, deadline: deadline, done: done}
	a.holdMu.Lock()
	a.queue.push(r)
	r.timer = time.AfterFunc(time.Until(deadline), func() { h.timedOut(a, r) })
	a.holdMu.Unlock()
	// The waiter loop may have taken its last look before the holder was added:
	// shutting down, or the app ready meanwhile.
	select {
	case <-h.stopping:
		if h.cancel(a, r) {
			return nil, holdShutdown, nil
		}
	default:
	}
	a.poke()
	if a.waiting.CompareAndSwap(false, true) {
		go h.loop(a)
	}
	return r, 0, nil
}

// cancel withdraws a holder; false means it was settled already (its done was or
// is being called).
func (h *holds) cancel(a *app, r *holder) bool {
	a.holdMu.Lock()
	if r.settled {
		a.holdMu.Unlock()
		return false
	}
	r.settled = true
	a.queue.remove(r)
	if a.queue.head == nil {
		a.release.done()
	}
	a.holdMu.Unlock()
	r.timer.Stop()
	h.drop(a)
	return true
}

// take counts one more request held for a, unless that would pass maxHeld for
// the app or the node's bound.
func (h *holds) take(a *app, maxHeld int) bool {
	if a.held.Add(1) > int64(maxHeld) {
		a.held.Add(-1)
		return false
	}
	n := h.held.Add(1)
	if h.maxHeld > 0 && n > int64(h.maxHeld) {
		h.held.Add(-1)
		a.held.Add(-1)
		h.full.log(h.log, "a request was not held: this node holds reaper.max_held requests already", fmt.Errorf("reaper.max_held is %d (app %s)", h.maxHeld, a.id))
		return false
	}
	h.crowdGC.note(n, h.crowdedAbove)
	return true
}

// drop counts one request less held for a.
func (h *holds) drop(a *app) {
	a.held.Add(-1)
	h.crowdGC.note(h.held.Add(-1), h.crowdedAbove)
}

// Bodies of held requests read into memory: at most heldBodyLimit each, and
// heldBodyBudget for the whole node.
const (
	heldBodyLimit  = 64 << 10
	heldBodyBudget = 64 << 20
)

// reserveBody takes n bytes of the node's budget for held bodies, if it has them.
func (h *holds) reserveBody(n int64) bool {
	if h.bodies.Add(n) > heldBodyBudget {
		h.bodies.Add(-n)
		return false
	}
	return true
}

func (h *holds) releaseBody(n int64) { h.bodies.Add(-n) }

// holdOutcome says how a hold ends given the app's record, when it ends now:
// released when the app is up and readyDelay has passed since this node saw it
// come up; in Error, as the Error says (errorResult), whatever the hold's own
// deadline: the wake ended, and every request held for it gets the same answer
// (a hold whose deadline passed before the Error was known ended then, see
// timedOut).
func holdOutcome(rec *Record, upSeen int64, readyDelay time.Duration, now time.Time) (holdResult, bool) {
	switch {
	case rec == nil:
	case rec.Status == StatusUp:
		if !now.Before(time.Unix(0, upSeen).Add(readyDelay)) {
			return holdReleased, true
		}
	case rec.Status == StatusError:
		return errorResult(rec), true
	}
	return 0, false
}

// errorResult is how the holds of an app in Error end: timed out when the Error
// is the wake's fail timeout (the job's word for what the requests' own timers
// say at about the same moment: which of the two a node sees first must not
// change the answer), failed otherwise.
func errorResult(rec *Record) holdResult {
	if rec.ErrorCause == CauseStartTimeout {
		return holdTimedOut
	}
	return holdFailed
}

// timedOut ends the hold of r, whose deadline passed, and decides the answer of
// the wake it waited for once, for every request held for the app with it: a wake
// that took longer than r's fail timeout took longer than any request held under
// the same or a shorter one may wait, so they all get the 504 now, not some of
// them the 504 and the rest, a moment later, the 503 of the Error the job puts the
// app in at the wake's fail timeout. Requests held under a longer fail timeout (a
// route that allows a slower boot) go on waiting. An app that is up (r waited its
// turn in the release, past its deadline) ends r's hold alone; an app in Error
// ends every hold with the Error's answer (errorResult).
func (h *holds) timedOut(a *app, r *holder) {
	rec := a.rec.Load()
	res, group, all := holdTimedOut, rec == nil || rec.Status != StatusUp, false
	if rec != nil && rec.Status == StatusError {
		res, all = errorResult(rec), true
	}
	var out []*holder
	a.holdMu.Lock()
	if r.settled {
		a.holdMu.Unlock()
		return
	}
	for x := a.queue.head; x != nil; {
		next := x.next
		if x == r || all || (group && x.failTimeout <= r.failTimeout) {
			x.settled = true
			a.queue.remove(x)
			out = append(out, x)
		}
		x = next
	}
	if a.queue.head == nil {
		a.release.done()
	}
	a.holdMu.Unlock()
	for _, x := range out {
		x.timer.Stop()
		h.drop(a)
		x.done(res, rec)
	}
}

// settle ends the holds whose outcome is known: all of them when shutting down,
// all of them when the app is in Error, and when it is up the ready ones, oldest
// first, as many as its release window has room for. It returns when the next
// holder will be ready (zero if none waits for that).
func (h *holds) settle(a *app, now time.Time, shutdown bool) (next time.Time) {
	rec := a.rec.Load()
	if !shutdown && (rec == nil || (rec.Status != StatusUp && rec.Status != StatusError)) {
		return time.Time{} // asleep: nothing to settle, however many wait
	}
	upSeen := a.upSeen.Load()
	type ended struct {
		r   *holder
		res holdResult
	}
	var out []ended
	a.holdMu.Lock()
	for r := a.queue.head; r != nil; {
		res, ok := holdShutdown, true
		if !shutdown {
			res, ok = holdOutcome(rec, upSeen, r.readyDelay, now)
		}
		if !ok {
			if at := time.Unix(0, upSeen).Add(r.readyDelay); next.IsZero() || at.Before(next) {
				next = at
			}
			r = r.next
			continue
		}
		if res == holdReleased && !a.release.take() {
			break // the window is full: the next one goes when a released one ends
		}
		r.settled = true
		following := r.next
		a.queue.remove(r)
		out = append(out, ended{r, res})
		r = following
	}
	if a.queue.head == nil {
		a.release.done()
	}
	a.holdMu.Unlock()
	for _, x := range out {
		x.r.timer.Stop()
		h.drop(a)
		x.r.done(x.res, rec)
	}
	return next
}

// releaseEnded gives back the place of a released request in its app's release
// window, once the request ended; ok says whether the app answered it well (a
// status below 500). It wakes the waiter loop, which may release more.
func (h *holds) releaseEnded(a *app, ok bool) {
	a.holdMu.Lock()
	a.release.ended(ok)
	a.holdMu.Unlock()
	a.poke()
}

// holdQueue is the requests held for one app, oldest first: a list linked
// through the holders, so that a client that leaves is taken out at once. It is
// changed under appHolds.holdMu; its length may be read at any time.
type holdQueue struct {
	head, tail *holder
	n          atomic.Int64
}

// waiting reports whether requests wait in the queue; it takes no lock.
func (q *holdQueue) waiting() bool { return q.n.Load() > 0 }

func (q *holdQueue) push(r *holder) {
	q.n.Add(1)
	r.prev, r.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = r
	} else {
		q.head = r
	}
	q.tail = r
}

func (q *holdQueue) remove(r *holder) {
	q.n.Add(-1)
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		q.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		q.tail = r.prev
	}
	r.prev, r.next = nil, nil
}

// wait holds the request on the caller's goroutine until the hold ends or ctx
// does (holdGone). It returns how the hold ended and the record it ended on.
func (h *holds) wait(ctx context.Context, a *app, maxHeld int, readyDelay, failTimeout time.Duration, deadline time.Time) (holdResult, *Record) {
	ch := make(chan holdEnd, 1)
	r, res, rec := h.start(a, maxHeld, readyDelay, failTimeout, deadline, func(res holdResult, rec *Record) { ch <- holdEnd{res, rec} })
	if r == nil {
		return res, rec
	}
	return h.await(ctx, a, r, ch)
}

// holdEnd is how a hold ended, and the app's record it ended on.
type holdEnd struct {
	res holdResult
	rec *Record
}

// await waits for the result of r, sent on ch, or for ctx to end.
func (h *holds) await(ctx context.Context, a *app, r *holder, ch <-chan holdEnd) (holdResult, *Record) {
	var end holdEnd
	select {
	case end = <-ch:
	case <-ctx.Done():
		if h.cancel(a, r) {
			return holdGone, nil
		}
		end = <-ch
	}
	return end.res, end.rec
}

// loop is the app's waiter loop, run while requests are held for it: it settles
// their holds when the app's record changes (or a holder's ready delay passes),
// and at every poll interval asks the lookout for a fresh look at the app.
func (h *holds) loop(a *app) {
	poll := time.NewTicker(h.pollInterval)
	defer poll.Stop()
	ready := time.NewTimer(time.Hour)
	ready.Stop()
	defer ready.Stop()
	for {
		ch := a.changed() // before reading the record, so no change is missed
		if next := h.settle(a, time.Now(), false); !next.IsZero() {
			ready.Reset(time.Until(next))
		}
		select {
		case <-ch:
		case <-a.poked:
		case <-ready.C:
		case <-h.stopping:
			h.settle(a, time.Now(), true)
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
			h.lookout.lookAgain(a)
		}
	}
}

// poke wakes the app's waiter loop (a holder was added).
func (a *appHolds) poke() {
	select {
	case a.poked <- struct{}{}:
	default:
	}
}

// recheck asks the job to observe the app now (with a wake ask when wake is set)
// and waits, briefly, for its record to say it sleeps, or that it came up again
// since (see downSince). It returns whether one of them does.
// A refused connection waits here for the job's verdict.
func (e *Engine) recheck(ctx context.Context, a *app, wake bool) bool {
	from := a.rec.Load()
	if downSince(from, from) {
		return true
	}
	ch := a.changed()
	e.lookSoon(a, wake, time.Now())
	t := time.NewTimer(recheckWait)
	defer t.Stop()
	for {
		select {
		case <-ch:
			if downSince(from, a.rec.Load()) {
				return true
			}
			ch = a.changed()
		case <-t.C:
			return downSince(from, a.rec.Load())
		case <-ctx.Done():
			return false
		}
	}
}

// downSince reports whether cur, the app's record now, says that it went down
// after from, the record when its connection was refused: it sleeps or wakes, or
// it came up again since (a later LastUpAt). The last case matters: a restart can
// pass through WaitingForUp and back to Up before the waiter, woken by the first
// change, reads the record (the app restarts fast, or the machine is loaded); the
// refused request must then be held or dialled again as for a woken app, not
// answered a 502 as if the app had stayed up refusing connections.
func downSince(from, cur *Record) bool {
	switch {
	case cur == nil:
		return false
	case cur.Status.Asleep():
		return true
	}
	return from != nil && cur.Status == StatusUp && !cur.LastUpAt.Equal(from.LastUpAt)
}

// recheckWait bounds how long a refused request waits for the job's verdict.
const recheckWait = 3 * time.Second

package reaper

import (
	"context"
	"time"
)

// The port's hold in its parts, for a transport that decides its own answer
// from how a hold ended (HTTP: a 503 that says why, a 504 with the status the
// holds timed out on) or waits off its goroutine (a parked HTTP request).
// Route.Hold is made of them.

// HoldEnd is how a hold ended, and the app's record it ended on.
type HoldEnd struct {
	// Err is nil when the app is up; else ErrAppFailed, ErrHoldTimeout,
	// ErrTooManyHeld, ErrShuttingDown, or ErrCallerGone.
	Err error
	// Released: the caller waited and was released when the app came up. It
	// holds a place in the app's release window (release.go), given back with
	// Route.GiveBack once the app took it, or not.
	Released bool
	// Rec is the app's record the hold ended on: the callers whose holds end
	// together are answered from the same record. Nil when it ended without
	// one (the caller left, the node shuts down).
	Rec *Record
}

var holdErrs = [...]error{holdReleased: nil, holdReady: nil, holdFailed: ErrAppFailed,
	holdTimedOut: ErrHoldTimeout, holdGone: ErrCallerGone, holdTooMany: ErrTooManyHeld,
	holdShutdown: ErrShuttingDown}

func holdEndOf(res holdResult, rec *Record) HoldEnd {
	return HoldEnd{Err: holdErrs[res], Released: res == holdReleased, Rec: rec}
}

// Waited reports whether the caller was held (not let through at once, not
// gone): what Route.ObserveHeld counts.
func (h HoldEnd) Waited() bool { return h.Released || (h.Err != nil && h.Err != ErrCallerGone) }

// Wait holds the caller on its goroutine until the app is up (and its ready
// delay passed), or the hold ends otherwise: deadline, Error, max_held, shutdown,
// or ctx's end (ErrCallerGone). Unlike Hold it neither asks for a wake nor
// observes the wait.
func (r *Route) Wait(ctx context.Context, deadline time.Time) HoldEnd {
	return holdEndOf(r.e.holds.wait(ctx, r.a, r.cfg.MaxHeld, r.readyDelay, r.cfg.FailTimeout.D(), deadline))
}

// StartHold holds the caller off its goroutine. When the outcome is known at
// once it returns it, with started false. Otherwise done is called later,
// exactly once and from another goroutine, with how the hold ended — unless
// cancel returns true first (false: done was or is being called).
func (r *Route) StartHold(deadline time.Time, done func(HoldEnd)) (cancel func() bool, end HoldEnd, started bool) {
	h, res, rec := r.e.holds.start(r.a, r.cfg.MaxHeld, r.readyDelay, r.cfg.FailTimeout.D(), deadline,
		func(res holdResult, rec *Record) { done(holdEndOf(res, rec)) })
	if h == nil {
		return nil, holdEndOf(res, rec), false
	}
	return func() bool { return r.e.holds.cancel(r.a, h) }, HoldEnd{}, true
}

// GiveBack gives back a released caller's place in the app's release window
// (HoldEnd.Released), once per release; ok says whether the app took it well.
func (r *Route) GiveBack(ok bool) { r.e.holds.releaseEnded(r.a, ok) }

// ObserveHeld records how long a held caller, arrived at since, waited
// (Observer.HeldWait), when it did wait (HoldEnd.Waited).
func (r *Route) ObserveHeld(since time.Time, end HoldEnd) {
	if end.Waited() {
		r.e.observer.HeldWait(r.a.id, time.Since(since))
	}
}

// Releasing reports whether callers held for the app are still being released
// at its pace (release.go): a caller that finds the app up then should hold
// (Wait) and go behind them, not straight to the app. It never waits.
func (r *Route) Releasing() bool { return r.a.queue.waiting() }

// Crowded reports whether more callers are held on this node than it releases
// at a time without closing their connections after (holds.crowdedAbove).
func (r *Route) Crowded() bool { return r.e.holds.held.Load() > r.e.holds.crowdedAbove }

// ReserveBody takes n bytes of the node's budget for the bodies of held
// requests, read into memory while held; false when it has not that much left.
func (r *Route) ReserveBody(n int64) bool { return r.e.holds.reserveBody(n) }

// ReleaseBody gives back what ReserveBody took.
func (r *Route) ReleaseBody(n int64) { r.e.holds.releaseBody(n) }

package reaper

import (
	"errors"
	"time"

	"github.com/reapergw/reaper/paas"
)

// What happens to a record after Decide, once the job has acted: the platform's
// answer to a start or a stop, a request that came while an app went to sleep, an
// app the platform no longer knows. Pure like Decide (the job passes the time and
// the platform's error), so that only these functions and Decide change a status.

// afterStart is the record once the platform answered the start Decide asked for:
// next is Decide's record (WaitingForUp), err the platform's answer. served says
// whether the wake ask behind it is served, and may be cleared: the start was
// accepted, or it can never be.
func afterStart(next Record, err error, now time.Time) (rec Record, served bool) {
	switch {
	case err == nil:
		next.RetryStart = false // accepted: no longer uncertain
		if next.Wake != nil && next.Wake.AcceptedAt.IsZero() {
			w := *next.Wake
			w.AcceptedAt = now
			next.Wake = &w
		}
		return next, true
	case errors.Is(err, paas.ErrNeverDeployed):
		return toError(next, "the app was never deployed: it cannot be started", now), true
	case errors.Is(err, paas.ErrStartFailed), errors.Is(err, paas.ErrNotFound), errors.Is(err, paas.ErrAuth):
		return toError(next, "the start failed: "+err.Error(), now), true
	}
	// A passing failure (a rate limit, a busy app, a platform error): the start
	// was not accepted (RetryStart stays), and Decide sends it again at the next
	// look. The ask stays.
	next.RetryStart = true
	return next, false
}

// afterStop is the record once the platform answered our stop: next is Decide's
// record (WaitingForShutdown), upActionAt the ActionAt the app had in Up. A stop
// the platform refuses for good (the app must not be stopped) or for now (a
// passing failure) leaves the app up; any other failure is an Error.
func afterStop(next Record, upActionAt time.Time, err error, now time.Time) Record {
	switch {
	case err == nil:
		next.StopSentAt = now
		return next
	case errors.Is(err, paas.ErrNotShutdownable):
		return stayUp(next, upActionAt, CauseNotShutdownable, now)
	case paas.Retryable(err):
		return stayUp(next, upActionAt, "the stop failed: "+err.Error(), now)
	}
	return toError(next, "the stop failed: "+err.Error(), now)
}

// afterStuckStop is the record once the platform answered an operator's forced
// stop of an app in Error or stuck waking: prev is the app before it, next
// Decide's record (WaitingForShutdown). A stop refused for now leaves prev as it
// was, the ask still pending (the next look sends it again); refused for good
// (the app must not be stopped), prev with the ask dropped; any other failure
// is an Error.
func afterStuckStop(prev, next Record, err error, now time.Time) Record {
	switch {
	case err == nil:
		next.StopSentAt = now
		return next
	case errors.Is(err, paas.ErrNotShutdownable):
		back := withheld(prev, next)
		back.SleepAsk = nil
		return back
	case paas.Retryable(err):
		return withheld(prev, next)
	}
	return toError(next, "the stop failed: "+err.Error(), now)
}

// stuckStopWithdrawn is the record of an app in Error whose forced stop was
// decided (next, in WaitingForShutdown) but not sent: requests were at it. It
// is back in Error (prev), as of now, its ask renewed: the next look tries
// again.
func stuckStopWithdrawn(prev, next Record, now time.Time) Record {
	back := withheld(prev, next)
	back.LastStatusUpdate = now
	if back.SleepAsk != nil {
		a := *back.SleepAsk
		a.At = now
		back.SleepAsk = &a
	}
	return back
}

// CauseRequestWhileStopping is why an app marked WaitingForShutdown stays up: a
// request came after the decision, before the stop was sent.
const CauseRequestWhileStopping = "a request arrived while it was going to sleep"

// stopWithdrawn is the record of an app whose stop was decided (next, in
// WaitingForShutdown) but not sent: a request came meanwhile. It stays up.
func stopWithdrawn(next Record, upActionAt time.Time, now time.Time) Record {
	return stayUp(next, upActionAt, CauseRequestWhileStopping, now)
}

// stayUp puts an app marked WaitingForShutdown back in Up, its stop not sent or
// not accepted. It never stopped, so LastUpAt stays (its grace period is not
// renewed), and ActionAt goes back to upActionAt.
func stayUp(r Record, upActionAt time.Time, cause string, now time.Time) Record {
	r.Status, r.Cause, r.ActionAt, r.LastStatusUpdate = StatusUp, cause, upActionAt, now
	return r
}

// withheld is the record when Decide's action is withheld (dry run, kill switch):
// the record stays as it was, but says it was looked at, when, by which term and
// what the platform said.
func withheld(rec, next Record) Record {
	rec.LastCheckAt, rec.PlatformState, rec.Term = next.LastCheckAt, next.PlatformState, next.Term
	return rec
}

// afterObserveError is the record of an app whose observation failed with err:
// an app the platform does not know goes to Error (an operator must look), with
// the driver's own words as the cause when it has some (paas.CauseOf: the
// workload deleted, by name). Any other failure changes nothing (the next tick
// tries again): changed is false.
func afterObserveError(rec Record, err error, now time.Time) (next Record, changed bool) {
	if !errors.Is(err, paas.ErrNotFound) || rec.Status == StatusError {
		return rec, false
	}
	cause := "the platform does not know this app (deleted, or not visible to reaper's credential)"
	if c := paas.CauseOf(err); c != "" {
		cause = c
	}
	return toError(rec, cause, now), true
}

// toError moves r to Error for cause, as looked at now.
func toError(r Record, cause string, now time.Time) Record {
	r = enter(r, StatusError, cause, now)
	r.LastStatusUpdate = now
	r.LastCheckAt = now
	return r
}

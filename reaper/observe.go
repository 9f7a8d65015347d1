package reaper

import (
	"context"
	"errors"
	"time"

	"github.com/reapergw/reaper/paas"
)

// Observer is told what the reaper does, for metrics. Its methods are called on
// the paths that do the work (a held request's release, the job's step) and must
// be quick; labels are app ids from the configuration and the bounded values
// documented on each method. A nil Observer in EngineOptions observes nothing.
type Observer interface {
	// HeldWait: a held request waited d, then was released or answered in its
	// place.
	HeldWait(app string, d time.Duration)
	// WakePhase: a wake's phase (PhaseAccepted, PhaseUp, PhaseFirstAnswer, or
	// "total" from the ask to the first answer) took d.
	WakePhase(app, phase string, d time.Duration)
	// Woke: the platform accepted a start; cause is request, keep_up, hold,
	// prewake or other.
	Woke(app, cause string)
	// Slept: the platform accepted a stop; cause is idle or operator.
	Slept(app, cause string)
	// PaaSCall: a platform call (observe, observe_all, last_deployment, start,
	// stop, cost) ended with outcome (ok, not_found, auth, busy, rate_limited,
	// unavailable, start_failed, never_deployed, not_shutdownable, canceled,
	// error) after d.
	PaaSCall(call, outcome string, d time.Duration)
	// AsksPending: the wake asks pending for app at the job's last pass (0 or 1).
	AsksPending(app string, n int)
}

// noObserver observes nothing.
type noObserver struct{}

func (noObserver) HeldWait(string, time.Duration)          {}
func (noObserver) WakePhase(string, string, time.Duration) {}
func (noObserver) Woke(string, string)                     {}
func (noObserver) Slept(string, string)                    {}
func (noObserver) PaaSCall(string, string, time.Duration)  {}
func (noObserver) AsksPending(string, int)                 {}

// PaaSOutcome names how a platform call ended, for Observer.PaaSCall.
func PaaSOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	for _, c := range []struct {
		err  error
		name string
	}{
		{paas.ErrNotFound, "not_found"}, {paas.ErrAuth, "auth"}, {paas.ErrBusy, "busy"},
		{paas.ErrRateLimited, "rate_limited"}, {paas.ErrUnavailable, "unavailable"},
		{paas.ErrStartFailed, "start_failed"}, {paas.ErrNeverDeployed, "never_deployed"},
		{paas.ErrNotShutdownable, "not_shutdownable"}, {context.Canceled, "canceled"},
		{context.DeadlineExceeded, "canceled"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "error"
}

// timed runs one platform call and tells the observer how it went.
func (j *Job) timed(call string, f func() error) error {
	start := time.Now()
	err := f()
	j.observer().PaaSCall(call, PaaSOutcome(err), time.Since(start))
	return err
}

func (j *Job) observer() Observer { return j.opts.Engine.observer }

// wakeCauseLabel sorts the cause of a start for Observer.Woke.
func wakeCauseLabel(cause string) string {
	switch cause {
	case CauseWakeAsked:
		return "request"
	case CauseKeepUp:
		return "keep_up"
	case CauseHeldAwake:
		return "hold"
	case CausePrewake:
		return "prewake"
	case CauseGroupAwake, CauseNeeded:
		return "group"
	}
	return "other"
}

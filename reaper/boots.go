package reaper

import (
	"fmt"
	"time"

	"github.com/reapergw/reaper/paas"
)

// Failed boots: a start whose app exits before it is ready (a port still held
// by its last run, a database not up yet) is started again with a back-off, and
// an app that crashes soon after it came up (a crash loop) is started again no
// sooner than its back-off says; MaxFailedBoots of either in a row put it in
// Error with the last exit status. Pure, like the rest of Decide.

// DefaultMaxFailedBoots is the failed boots in a row after which an app goes to
// Error, when its routes do not say (max_failed_boots).
const DefaultMaxFailedBoots = 5

// MaxFailedBootsLimit bounds max_failed_boots: past it the back-off's 30 s
// stretch a crash loop over more than an hour.
const MaxFailedBootsLimit = 100

// CrashWindow: an app that goes down by itself less than this after it came up
// failed its boot, as one that exits before it is ready. One that stayed up
// that long booted well: its count of failed boots starts again.
const CrashWindow = time.Minute

// The back-off between failed boots: BootBackoff after the first, twice as long
// after each next one, at most MaxBootBackoff.
const (
	BootBackoff    = time.Second
	MaxBootBackoff = 30 * time.Second
)

// FailedBoots are the app's failed boots in a row.
type FailedBoots struct {
	Count int `json:"count"`
	// Last says how the last one ended ("exited with status 1 before it was
	// ready", with the end of the app's log when the driver has it).
	Last string `json:"last"`
	// At is when reaper saw the last one; Start is when it had been started
	// (or came up), which tells one failure from the next.
	At    time.Time `json:"at"`
	Start time.Time `json:"start"`
	// RetryAt: no start is sent before it.
	RetryAt time.Time `json:"retry_at"`
}

// backingOff reports whether a start must wait for the back-off at now.
func (b *FailedBoots) backingOff(now time.Time) bool {
	return b != nil && now.Before(b.RetryAt)
}

// bootBackoff is the wait after the n-th failed boot in a row (n ≥ 1).
func bootBackoff(n int) time.Duration {
	d := BootBackoff
	for i := 1; i < n && d < MaxBootBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBootBackoff)
}

func (p Policy) maxFailedBoots() int {
	if p.MaxFailedBoots > 0 {
		return p.MaxFailedBoots
	}
	return DefaultMaxFailedBoots
}

// failedBoot counts a failed boot of the run started at start, which ended as
// how says; a run already counted is not counted again (counted false). The
// app goes to Error (failed true) on the policy's MaxFailedBoots-th in a row.
func failedBoot(r Record, start time.Time, how string, now time.Time, p Policy) (out Record, failed bool) {
	if r.Boots != nil && r.Boots.Start.Equal(start) {
		return r, false
	}
	b := FailedBoots{Count: 1, Last: how, At: now, Start: start}
	if r.Boots != nil {
		b.Count = r.Boots.Count + 1
	}
	b.RetryAt = now.Add(bootBackoff(b.Count))
	r.Boots = &b
	if b.Count >= p.maxFailedBoots() {
		return enter(r, StatusError, fmt.Sprintf("%d failed boots in a row; the last one %s", b.Count, how), now), true
	}
	return r, false
}

// retryBoot decides on a start of ours whose app ran and exited before it was
// ready (dep): counted as a failed boot, then started again once its back-off
// is over, while the fail timeout (from the wake) allows; wait keeps waiting.
func retryBoot(r Record, dep *paas.Deployment, state paas.State, now time.Time, p Policy, wait func(Record) (Record, Action)) (Record, Action) {
	r, failed := failedBoot(r, dep.At, dep.Cause, now, p)
	switch {
	case failed:
		return r, ActionNone
	case now.Sub(r.ActionAt) >= p.FailTimeout:
		return enter(r, StatusError, CauseStartTimeout+"; its last start "+r.Boots.Last, now), ActionNone
	case r.Boots.backingOff(now) || state != paas.StateShouldBeDown:
		return wait(r)
	case !r.StartSentAt.Before(r.Boots.At):
		// Started again since; a platform that lags still shows the failed run.
		// That start is sent once more only as any start is (decideWaitingForUp's
		// rules for a start with no sign of progress).
		since := now.Sub(r.StartSentAt)
		if (!r.RetryStart || since < UncertainStartGrace) && since < RestartAfter {
			return wait(r)
		}
	}
	r.StartSentAt, r.RetryStart = now, true
	return r, ActionStart
}

// crashedBooting says how an app that was up since upAt ended, when it ended by
// itself (in.Observation.Exit) within CrashWindow of it: a failed boot. "" when
// it did not (a stop from outside, or a crash after a good run).
func crashedBooting(upAt time.Time, in Input) string {
	e := in.Observation.Exit
	if e == nil || upAt.IsZero() || e.At.Before(upAt) || e.At.Sub(upAt) >= CrashWindow {
		return ""
	}
	return fmt.Sprintf("%s %s after it came up", e.Status, e.At.Sub(upAt).Round(time.Millisecond))
}

// crashed is decideUp's and decideWaitingForUp's answer to an app that went down
// by itself soon after it came up at upAt: Down, a failed boot counted (Error on
// the last one allowed).
func crashed(r Record, upAt time.Time, how string, now time.Time, p Policy) Record {
	r, failed := failedBoot(r, upAt, how, now, p)
	if failed {
		return r
	}
	return enter(r, StatusDown, "crashed: "+how, now)
}

// followReadiness tells the driver whether reaper waits for the app to be
// ready: not while it is in Error (only a reset brings it back, and the look
// that follows a reset tells the driver to probe again). Told on every record
// of an app in Error, so that a start from outside meanwhile is not probed
// either. An app in Error is not probed at all rather than rarely: reaper acts
// on nothing a probe could say of it, and a slow probe would only make the
// look after a reset find the app's readiness late.
func (e *Engine) followReadiness(prev, rec *Record) {
	w := e.opts.Readiness
	if w == nil || (rec.Status != StatusError && (prev == nil || prev.Status != StatusError)) {
		return
	}
	w.WaitReady(paas.App{ID: rec.AppID, Owner: rec.Owner}, rec.Status != StatusError)
}

package reaper

import (
	"time"

	"github.com/reapergw/reaper/paas"
)

// Action is what the job must ask the platform after a decision.
type Action string

// The actions Decide returns.
const (
	ActionNone  Action = ""
	ActionStart Action = "start"
	ActionStop  Action = "stop"
)

// RestartAfter is how long a start may make no visible progress (no deployment of
// ours, the platform still saying SHOULD_BE_DOWN) before it is sent again: a start
// call the platform accepted can still be lost.
const RestartAfter = 60 * time.Second

// UncertainStartGrace is how long a start not known to be accepted (RetryStart)
// is given to show on the platform before it is sent again: long enough for a
// call still on its way to land, short enough that a wake whose leader died
// before its call went out is not lost for a RestartAfter.
const UncertainStartGrace = time.Second

// DeploymentSlack widens what counts as the deployment our start or stop caused:
// one dated at or after ActionAt − DeploymentSlack. The platform dates a deployment
// with its own clock, which may run a little behind ours.
const DeploymentSlack = 10 * time.Second

// Input is what the job knows of the app besides its record.
type Input struct {
	// Observation is the platform's state, with the last deployment when the job
	// read it (see NeedsDeployment). A nil Deployment means "none".
	Observation paas.Observation
	// LastAccess is the latest request on the app, over every node (zero: never).
	LastAccess time.Time
	// Busy: requests in flight, open connections (WebSocket, downloads) or held
	// requests on some node.
	Busy bool
	// WakeAsked: a wake ask is pending; WakeAskedAt is when it was made (zero:
	// unknown, taken as now).
	WakeAsked   bool
	WakeAskedAt time.Time
	// Prewake: a visit is predicted soon (learned pre-wake); wakes a sleeping app.
	Prewake bool
	// Group is what the app's group and depends_on say (group.go).
	Group GroupInput
}

// Policy is the merged configuration of the routes that manage the app: the
// longest grace period and fail timeout, every route's keep-up ranges. Durations
// are expected positive.
type Policy struct {
	// GracePeriod is the idle time before the app is put to sleep.
	GracePeriod time.Duration
	// FailTimeout bounds a start or a stop; past it the app goes to Error.
	FailTimeout time.Duration
	// MaxFailedBoots is how many failed boots in a row put the app in Error
	// (boots.go); 0 means DefaultMaxFailedBoots.
	MaxFailedBoots int
	// MustBeUp are the keep-up windows.
	MustBeUp []Range
	// Prewake: some route learns the app's visits (`prewake: learn`); Location
	// is the time zone they are learned in (nil: DefaultTimezone).
	Prewake  bool
	Location *time.Location
	// BusyURL, when set, is asked before the app is put to sleep; a failing
	// one keeps it up for at most BusyMax (busy.go). The job applies it, not
	// Decide.
	BusyURL string
	BusyMax time.Duration
}

func (p Policy) location() *time.Location {
	if p.Location != nil {
		return p.Location
	}
	return defaultLocation()
}

// Causes that callers (history, events, tests) may compare with.
const (
	CauseReset           = "reset by an operator"
	CauseWakeAsked       = "woken: a wake was asked"
	CauseKeepUp          = "woken: inside a keep-up range"
	CauseStartTimeout    = "did not wake up within the fail timeout"
	CauseStopTimeout     = "did not stop within the fail timeout"
	CauseNotShutdownable = "the platform says it must not be stopped"
	CauseHeldAwake       = "woken: held awake by an operator"
)

// Decide is the reaper's decision for one app: from its record, what the job knows
// of it and the time, the new record and the action to send to the platform. It is
// pure (no clock, no I/O) and total: any status and any input give a record whose
// status is one of Statuses.
//
// The returned record always has LastCheckAt = now and PlatformState = the
// observed state. When its status differs from rec's, LastStatusUpdate = now, Cause
// says why, ErrorCause is set in Error and cleared elsewhere, LastUpAt = now on
// entering Up and LastDownAt = now on entering Down.
//
// A decision that lands in Down while a wake is asked or a keep-up range is open,
// with the platform saying SHOULD_BE_DOWN, goes on to WaitingForUp and a start in
// the same call, to lose no time. Only the final record is returned: its status
// change is one history entry (from rec.Status to WaitingForUp), and the Down it
// went through shows only as LastDownAt = now.
//
// Guarantees the callers rely on: ActionStart is never returned while the platform
// says SHOULD_BE_UP or WANTS_TO_BE_UP (on Clever Cloud a start restarts a running
// app); ActionStop is returned only for a record in Up (or in WaitingForShutdown
// whose stop was never sent), with the platform saying
// SHOULD_BE_UP and not NotShutdownable, when Idle holds; or for an operator's
// forced sleep of an app in Error or stuck waking (SleepAsk.From).
//
// A start whose app exits before it is ready, and a crash soon after a wake,
// are failed boots (boots.go): started again after a back-off, until the fail
// timeout or Policy.MaxFailedBoots in a row, then Error.
func Decide(rec Record, in Input, now time.Time, p Policy) (Record, Action) {
	state := in.Observation.State
	out := rec
	out.LastCheckAt = now
	out.PlatformState = state

	// An operator's forced sleep of an app in Error or stuck waking: stop it.
	if rec.SleepAsk.stopsStuck(rec) {
		return decideForcedStop(out, in, now)
	}
	// Error means hands off: the app may well be running, and only an operator
	// knows whether the cause is gone. Reset puts it back in WaitingForInit.
	if rec.Status == StatusError {
		return out, ActionNone
	}
	// Any other platform state (MODERATED, DEFAULT_OF_PAYMENT, …) means the
	// platform itself has a reason to hold the app: starting or stopping it could
	// fight the platform, so an operator must look.
	if !knownState(state) {
		return enter(out, StatusError, unexpectedStateCause(state), now), ActionNone
	}

	var act Action
	switch rec.Status {
	case StatusWaitingForInit:
		out = decideInit(out, in, now)
	case StatusUp:
		out, act = decideUp(out, in, now, p)
	case StatusWaitingForShutdown:
		out, act = decideShutdown(out, in, now, p)
	case StatusDown:
		out = decideDown(out, state, now)
	case StatusWaitingForUp:
		out, act = decideWaitingForUp(out, in, now, p)
	default:
		// A status this function does not know (a newer record read by an older
		// node, a corrupt record): keep our hands off, visibly.
		return enter(out, StatusError, "unknown reaper status "+quoteOrEmpty(string(rec.Status)), now), ActionNone
	}

	// Down and someone wants the app: start it. This is the Down rule, and it also
	// chains every decision that lands in Down (a stop that just finished while a
	// request was waiting: "wait for the stop, then start again"). Only when the
	// platform says SHOULD_BE_DOWN: a start on an app that WANTS_TO_BE_UP could
	// restart it; the next look sees it move to WaitingForUp or SHOULD_BE_DOWN.
	// A crash loop's back-off holds the start back (the job looks again when it
	// ends).
	// A dependency not up yet holds the start back (the job looks again when
	// it is up).
	if out.Status == StatusDown && state == paas.StateShouldBeDown && act == ActionNone && !out.Boots.backingOff(now) && !out.SleepAsk.settling(out, now) && in.Group.StartAfter == "" {
		if cause := wakeCause(out, in, now, p); cause != "" {
			out = enter(out, StatusWaitingForUp, cause, now)
			asked := in.WakeAskedAt
			if asked.IsZero() || asked.After(now) {
				asked = now
			}
			out.Wake = &WakeTimes{AskedAt: asked, Prewake: cause == CausePrewake}
			// RetryStart until the platform accepts the call (afterStart).
			out.ActionAt, out.StartSentAt, out.RetryStart = now, now, true
			act = ActionStart
		}
	}
	return out, act
}

// decideInit places an app seen for the first time (or after a reset) where the
// platform says it is. It never acts: whether it should sleep is the next look's
// business, once LastUpAt gives it a full grace period.
func decideInit(r Record, in Input, now time.Time) Record {
	switch in.Observation.State {
	case paas.StateShouldBeUp:
		return enter(r, StatusUp, "the platform says it is up", now)
	case paas.StateShouldBeDown:
		return enter(r, StatusDown, "the platform says it is down", now)
	}
	// WANTS_TO_BE_UP: starting, or a start that ended badly; the last deployment
	// tells which.
	dep := in.Observation.Deployment
	switch deploymentKind(dep) {
	case depFail:
		return enter(r, StatusError, withDeploymentCause("the last deployment failed", dep), now)
	case depCancelled:
		return enter(r, StatusDown, "the last deployment was cancelled", now)
	case depOK:
		// Finished, yet the app is not up: treat it as stopped, so a request
		// wakes it the normal way.
		return enter(r, StatusDown, "the last deployment ended but the app is not up", now)
	}
	r = enter(r, StatusWaitingForUp, "starting from outside", now)
	r.ActionAt = now
	return r
}

// decideUp follows the platform's word on a running app, and stops it once idle.
func decideUp(r Record, in Input, now time.Time, p Policy) (Record, Action) {
	if r.Boots != nil && now.Sub(r.LastUpAt) >= CrashWindow {
		r.Boots = nil // up long enough: it booted well
	}
	switch in.Observation.State {
	case paas.StateShouldBeDown:
		// Stopped from the console, or crashed: believe it. A crash soon after
		// it came up is a failed boot (a crash loop).
		if how := crashedBooting(r.LastUpAt, in); how != "" {
			return crashed(r, r.LastUpAt, how, now, p), ActionNone
		}
		return enter(r, StatusDown, "stopped from outside", now), ActionNone
	case paas.StateWantsToBeUp:
		// Redeployed or restarted from outside: requests must wait for it.
		r = enter(r, StatusWaitingForUp, "restarting from outside", now)
		r.ActionAt = now
		return r, ActionNone
	}
	asked := sleepAsked(r, in, now, p)
	if !asked && !Idle(r, in, now, p) {
		return r, ActionNone
	}
	if in.Observation.NotShutdownable {
		// The platform says the app must never be stopped: obey, and say why it
		// stays up although idle.
		r.Cause = CauseNotShutdownable
		return r, ActionNone
	}
	dep := in.Observation.Deployment
	switch deploymentKind(dep) {
	case depRunning:
		// A deployment is running (a redeploy from outside): stopping now would
		// cut it; look again next time.
		return r, ActionNone
	case depFail:
		// A stopped app is started again from its last deployment: if that one
		// failed, the app would not come back.
		return enter(r, StatusError, "the last deployment failed: it cannot be put to sleep safely", now), ActionNone
	case depCancelled:
		return enter(r, StatusError, "the last deployment was cancelled: it cannot be put to sleep safely", now), ActionNone
	}
	cause := "idle for " + p.GracePeriod.String()
	if asked {
		cause = "put to sleep by " + r.SleepAsk.By
	}
	r = enter(r, StatusWaitingForShutdown, cause, now)
	r.ActionAt = now
	return r, ActionStop
}

// decideShutdown waits for our stop to show. SHOULD_BE_UP lingers for a while
// after a stop, so it is not a failure until the fail timeout. A stop that was
// never sent (StopSentAt before ActionAt: the step that decided it was cut short)
// is decided again as for an app that is up: sent if the app is still idle,
// dropped (back to Up) if a request came meanwhile.
func decideShutdown(r Record, in Input, now time.Time, p Policy) (Record, Action) {
	stuck := r.SleepAsk.stuckStop(r)
	switch in.Observation.State {
	case paas.StateShouldBeDown:
		return enter(r, StatusDown, "stopped", now), ActionNone
	case paas.StateWantsToBeUp:
		if stuck {
			break // the stop of an app that was starting: the platform catches up
		}
		r = enter(r, StatusWaitingForUp, "restarting from outside", now)
		r.ActionAt = now
		return r, ActionNone
	}
	if r.StopSentAt.Before(r.ActionAt) {
		if stuck {
			return r, ActionStop // an operator's forced stop, never sent: send it
		}
		up := r
		up.Status = StatusUp
		if next, act := decideUp(up, in, now, p); act == ActionStop {
			r.ActionAt = next.ActionAt
			return r, ActionStop
		} else if next.Status != StatusUp {
			return next, ActionNone
		}
		return enter(r, StatusUp, "the stop was never sent, and the app is no longer idle", now), ActionNone
	}
	if now.Sub(r.ActionAt) >= p.FailTimeout {
		return enter(r, StatusError, CauseStopTimeout, now), ActionNone
	}
	return r, ActionNone
}

// decideForcedStop stops an app in Error or stuck waking, as an operator forced
// it to sleep: at once when it is waking (the requests held for it do not use
// it), once nothing is in flight in Error (requests go through to it then).
// Whatever the platform says: a stop of an app that is down does nothing.
func decideForcedStop(r Record, in Input, now time.Time) (Record, Action) {
	from := r.Status
	if from == StatusError && in.Busy {
		return r, ActionNone
	}
	r = enter(r, StatusWaitingForShutdown, "put to sleep by "+r.SleepAsk.By+" (forced, from "+string(from)+")", now)
	r.ActionAt, r.RetryStart = now, false
	return r, ActionStop
}

// decideDown follows the platform's word on a stopped app. Starting it on demand
// is the chaining step of Decide.
func decideDown(r Record, state paas.State, now time.Time) Record {
	switch state {
	case paas.StateShouldBeUp:
		// Started from outside: LastUpAt = now gives it a full grace period.
		return enter(r, StatusUp, "started from outside", now)
	case paas.StateWantsToBeUp:
		r = enter(r, StatusWaitingForUp, "starting from outside", now)
		r.ActionAt = now
		return r
	}
	return r
}

// decideWaitingForUp follows a start. Only a deployment dated from the start on
// (with DeploymentSlack) tells about it; an older one is the past.
//
// The fail timeout ends the waits, not the outcomes: an app seen up, or a start
// seen failed or cancelled, gets that status even when the look comes late. An app
// that is up is better Up (it will sleep again) than in Error (kept awake until an
// operator resets it).
func decideWaitingForUp(r Record, in Input, now time.Time, p Policy) (Record, Action) {
	var dep *paas.Deployment
	ours := func(d *paas.Deployment) bool { return d != nil && !d.At.Before(r.ActionAt.Add(-DeploymentSlack)) }
	// An UNDEPLOY is a stop: the one that put the app to sleep may well be dated
	// within the slack of our start, and it is never our start's deployment. But
	// a stop whose deployment before it is ours came after our start: the app
	// woke and was stopped from outside before we looked.
	stoppedSince := false
	switch d := in.Observation.Deployment; {
	case d == nil || !ours(d):
	case d.Action != "UNDEPLOY":
		dep = d
	case d.Before != nil && d.Before.Action != "UNDEPLOY" && ours(d.Before):
		dep, stoppedSince = d.Before, true
	}
	kind := deploymentKind(dep)
	waitRec := func(r Record) (Record, Action) {
		if now.Sub(r.ActionAt) >= p.FailTimeout {
			return enter(r, StatusError, CauseStartTimeout, now), ActionNone
		}
		return r, ActionNone
	}
	wait := func() (Record, Action) { return waitRec(r) }
	// A start of ours whose app ran and exited before it was ready is started
	// again, with a back-off; any other failed start of ours is final whatever
	// the state says.
	if kind == depFail && dep.Exited {
		return retryBoot(r, dep, in.Observation.State, now, p, waitRec)
	}
	if kind == depFail {
		return enter(r, StatusError, withDeploymentCause("the start failed", dep), now), ActionNone
	}
	switch in.Observation.State {
	case paas.StateShouldBeUp:
		if kind == depRunning {
			// Instances may answer before the deployment ends; wait for it.
			return wait()
		}
		// LastUpAt = now: a woken app gets a full grace period.
		if r.Wake != nil && r.Wake.UpAt.IsZero() {
			w := *r.Wake
			w.UpAt = now
			r.Wake = &w
		}
		return enter(r, StatusUp, "woke up", now), ActionNone
	case paas.StateWantsToBeUp:
		if kind == depCancelled {
			return enter(r, StatusDown, "the start was cancelled", now), ActionNone
		}
		return wait()
	}
	// SHOULD_BE_DOWN: the platform says so until the deployment begins.
	if stoppedSince {
		return enter(r, StatusDown, "stopped right after it woke up", now), ActionNone
	}
	switch kind {
	case depCancelled:
		return enter(r, StatusDown, "the start was cancelled", now), ActionNone
	case depNone:
		// No sign of our start yet. A start not known to be accepted
		// (RetryStart: its call failed, or its sender died before the answer) is
		// sent again once UncertainStartGrace has passed since it was sent; an
		// accepted one after RestartAfter without progress (or since the action
		// began, for a start we did not send). ActionAt stays, so the fail
		// timeout still counts from the first.
		since := now.Sub(latest(r.StartSentAt, r.ActionAt))
		if ((r.RetryStart && since >= UncertainStartGrace) || since >= RestartAfter) && now.Sub(r.ActionAt) < p.FailTimeout {
			r.StartSentAt, r.RetryStart = now, true
			return r, ActionStart
		}
	case depOK:
		// Our start finished, yet the platform says down: the app came up and was
		// stopped (from outside, or it crashed) before we looked. It is down; a
		// crash is a failed boot.
		if how := crashedBooting(dep.At, in); how != "" {
			return crashed(r, dep.At, how, now, p), ActionNone
		}
		return enter(r, StatusDown, "stopped right after it woke up", now), ActionNone
	}
	// In progress: wait.
	return wait()
}

// Reset is the operator's reset: back to WaitingForInit, so the next look places
// the app where the platform says it is. The clocks are kept. It never fails and
// may be repeated.
func Reset(rec Record, now time.Time) Record {
	rec.Boots = nil // the operator says the cause is gone: a fresh count
	return enter(rec, StatusWaitingForInit, CauseReset, now)
}

// NeedsDeployment says whether Decide would look at the last deployment for this
// record and platform state, so the job reads it (one API call per app on Clever
// Cloud) only then. When it is false, Decide gives the same result whatever
// in.Observation.Deployment holds. state is the state the job observed; the rest
// of in is used as Decide uses it.
func NeedsDeployment(rec Record, state paas.State, in Input, now time.Time, p Policy) bool {
	if !knownState(state) || rec.SleepAsk.stopsStuck(rec) {
		return false // an operator's forced stop looks at nothing more
	}
	switch rec.Status {
	case StatusWaitingForInit:
		return state == paas.StateWantsToBeUp
	case StatusUp:
		return state == paas.StateShouldBeUp && !in.Observation.NotShutdownable && (Idle(rec, in, now, p) || sleepAsked(rec, in, now, p))
	case StatusWaitingForUp:
		return true
	case StatusWaitingForShutdown:
		// A stop never sent is decided again as for an app that is up.
		if state == paas.StateShouldBeUp && rec.StopSentAt.Before(rec.ActionAt) {
			up := rec
			up.Status = StatusUp
			return NeedsDeployment(up, state, in, now, p)
		}
	}
	return false
}

// enter moves r to status s for cause, keeping the clocks that say when.
func enter(r Record, s Status, cause string, now time.Time) Record {
	if r.Status != s {
		r.LastStatusUpdate = now
		switch s {
		case StatusUp:
			r.LastUpAt = now
		case StatusDown:
			r.LastDownAt = now
		}
	}
	r.Status = s
	r.Cause = cause
	r.ErrorCause = ""
	if s == StatusError {
		r.ErrorCause = cause
	}
	return r
}

// wakeCause says why a sleeping app must start, or "" if it may sleep on.
func wakeCause(rec Record, in Input, now time.Time, p Policy) string {
	switch {
	case in.WakeAsked:
		return CauseWakeAsked
	case p.KeepUp(now):
		return CauseKeepUp
	case rec.Hold.Active(now):
		return CauseHeldAwake
	case in.Prewake:
		return CausePrewake
	case in.Group.Wake:
		return CauseGroupAwake
	case in.Group.Needed:
		return CauseNeeded
	}
	return ""
}

type depKind int

const (
	depNone depKind = iota
	depRunning
	depOK
	depFail
	depCancelled
)

// deploymentKind sorts a deployment. A state we do not know is taken as not
// finished: waiting is the safe reading, and the fail timeout bounds it.
func deploymentKind(d *paas.Deployment) depKind {
	if d == nil {
		return depNone
	}
	switch d.State {
	case paas.DeploymentOK:
		return depOK
	case paas.DeploymentFail:
		return depFail
	case paas.DeploymentCancelled:
		return depCancelled
	}
	return depRunning
}

func withDeploymentCause(msg string, d *paas.Deployment) string {
	if d != nil && d.Cause != "" {
		return msg + ": " + d.Cause
	}
	return msg
}

func knownState(s paas.State) bool {
	return s == paas.StateShouldBeUp || s == paas.StateShouldBeDown || s == paas.StateWantsToBeUp
}

func unexpectedStateCause(s paas.State) string {
	return "unexpected platform state " + quoteOrEmpty(string(s))
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

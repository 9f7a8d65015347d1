package reaper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reapergw/reaper/paas"
)

// step looks at one app under its lock: observe, decide, act, record.
func (j *Job) step(ctx context.Context, term uint64, t target, pd *passData) {
	id := t.app.ID
	lock, err := j.opts.Store.Lock(ctx, id, j.opts.LockTTL)
	if errors.Is(err, ErrLocked) {
		return // another decider has it; its result reaches us through the store
	}
	if err != nil {
		j.apiErr.log(j.log, "taking an app's lock failed", err)
		return
	}
	ctx, stopKeeping := j.keepLock(ctx, lock, id)
	defer func() {
		stopKeeping()
		j.release(context.WithoutCancel(ctx), lock)
	}()

	rec, ok, err := j.opts.Store.Record(ctx, id)
	if err != nil {
		j.apiErr.log(j.log, "reading a record failed", err)
		return
	}
	now := j.opts.Now()
	if !ok {
		rec = Record{AppID: id, Status: StatusWaitingForInit, LastStatusUpdate: now}
	}
	if rec.Term > term {
		return // a newer leader wrote it: we are no longer the one to act
	}
	rec.Owner, rec.Name = t.app.Owner, t.name

	if !t.managed && !j.unmanaged(ctx, term, t, rec, now) {
		return
	}

	obs, found := pd.obs[t.app]
	if pd.obs == nil || !found {
		obs, err = j.opts.PaaS.Observe(ctx, t.app)
		if err != nil {
			j.observeFailed(ctx, term, rec, err, now)
			return
		}
	}
	in := j.input(id, obs, pd)
	if !t.managed {
		in.WakeAsked, in.Busy = true, true // wake it, never stop it
	}
	if rd, ok := j.opts.PaaS.(paas.DeploymentReader); ok && NeedsDeployment(rec, obs.State, in, now, t.policy) {
		if found { // a batch observation is cheap and partial: look closer before acting
			if in.Observation, err = j.opts.PaaS.Observe(ctx, t.app); err != nil {
				j.observeFailed(ctx, term, rec, err, now)
				return
			}
		}
		dep, err := rd.LastDeployment(ctx, t.app)
		if err != nil {
			j.apiErr.log(j.log, "reading an app's last deployment failed; trying again at the next tick", fmt.Errorf("%s: %w", id, err))
			return
		}
		if dep != nil && dep.State == paas.DeploymentOK && in.Observation.State == paas.StateShouldBeDown {
			// The state was read before the deployment: a start that ended in
			// between looks like an app stopped right after it woke. Read the
			// state again, after the deployment, so that it cannot be older.
			if in.Observation, err = j.opts.PaaS.Observe(ctx, t.app); err != nil {
				j.observeFailed(ctx, term, rec, err, now)
				return
			}
		}
		in.Observation.Deployment = dep
	}

	next, act := Decide(rec, in, now, t.policy)
	next.Term = term
	switch act {
	case ActionStop:
		j.stop(ctx, t, rec, next, in, pd.settings)
	case ActionStart:
		j.start(ctx, t, rec, next, now)
	default:
		j.write(ctx, rec, &next)
	}
	if _, asked := pd.asks[id]; asked && act != ActionStart {
		if st := next.Status; st == StatusUp || st == StatusError {
			// Awake (or hands off): the ask is satisfied.
			j.clearAsk(ctx, id, now)
		}
	}
}

// keepLock extends the app's lock every third of its TTL while the step runs, so
// that a short TTL (a dead leader's lock frees quickly) still covers a long step
// (a slow platform, a stop that waits for the app). If the lock is lost, the
// returned context ends: the step must not act without it.
func (j *Job) keepLock(ctx context.Context, lock Lock, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	extended := time.Now()
	go func() {
		t := time.NewTicker(j.opts.LockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				err := lock.Extend(ctx, j.opts.LockTTL)
				switch {
				case err == nil:
					extended = time.Now()
				case errors.Is(err, ErrLockLost) || time.Since(extended) >= j.opts.LockTTL:
					j.log.Warn("an app's lock was lost during its step; abandoning the step", "app", id, "err", err)
					cancel()
					return
				default:
					// A passing store error: the lock still has time; try again at
					// the next tick rather than abandon a step half done.
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// release frees the app's lock. If the store fails to (a network blip), it tries
// again a few times, so that the app is not kept from its next decision until the
// lock's TTL runs out; past that, the TTL frees it.
func (j *Job) release(ctx context.Context, lock Lock) {
	wait := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := lock.Release(rctx)
		cancel()
		if err == nil || attempt == 4 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		wait *= 2
	}
}

// input gathers what Decide needs besides the record, from this pass's data and
// this node's exact counts.
func (j *Job) input(id string, obs paas.Observation, pd *passData) Input {
	la, busy := j.opts.Engine.LocalTraffic(id)
	if stored := pd.access[id]; stored.After(la) {
		la = stored
	}
	_, asked := pd.asks[id]
	return Input{Observation: obs, LastAccess: la, Busy: busy > 0 || pd.inFlight[id] > 0, WakeAsked: asked}
}

// observeFailed records what an observation error means: an app the platform does
// not know goes to Error (an operator must look); anything else is retried at the
// next tick.
func (j *Job) observeFailed(ctx context.Context, term uint64, rec Record, err error, now time.Time) {
	if !errors.Is(err, paas.ErrNotFound) {
		j.apiErr.log(j.log, "observing an app failed; trying again at the next tick", fmt.Errorf("%s: %w", rec.AppID, err))
		return
	}
	if rec.Status == StatusError {
		return
	}
	next := toError(rec, "the platform does not know this app (deleted, or not visible to reaper's credential)", now)
	next.Term = term
	j.write(ctx, rec, &next)
}

func toError(rec Record, cause string, now time.Time) Record {
	rec.Status = StatusError
	rec.Cause = cause
	rec.ErrorCause = cause
	rec.LastStatusUpdate = now
	rec.LastCheckAt = now
	return rec
}

// stop puts an idle app to sleep: it marks it WaitingForShutdown first, so that
// every node holds new requests instead of sending them to an app about to stop,
// then checks its traffic once more and only then asks the platform.
func (j *Job) stop(ctx context.Context, t target, prev, next Record, in Input, settings Settings) {
	if settings.DryRun || settings.KillSwitch {
		if settings.DryRun {
			j.log.Info("dry run: would put an idle app to sleep", "app", t.app.ID, "cause", next.Cause)
		}
		keep := prev
		keep.LastCheckAt, keep.PlatformState, keep.Term = next.LastCheckAt, next.PlatformState, next.Term
		j.write(ctx, prev, &keep)
		return
	}
	if !j.verify(ctx) || !j.write(ctx, prev, &next) {
		return
	}
	if j.opts.SettleDelay > 0 {
		select {
		case <-time.After(j.opts.SettleDelay):
		case <-ctx.Done():
			return // the next leader sees WaitingForShutdown and the app still up
		}
	}
	if cause := j.trafficSince(ctx, t.app.ID, in.LastAccess); cause != "" {
		back := next
		back.Status, back.Cause, back.ActionAt = StatusUp, cause, prev.ActionAt
		back.LastStatusUpdate = j.opts.Now()
		j.write(ctx, next, &back)
		return
	}
	if !j.verify(ctx) {
		return // the next leader sees a stop never sent, and decides again
	}
	if err := j.opts.PaaS.Stop(ctx, t.app); err != nil {
		now := j.opts.Now()
		if errors.Is(err, paas.ErrNotShutdownable) {
			back := next
			back.Status, back.Cause, back.ActionAt, back.LastStatusUpdate = StatusUp, CauseNotShutdownable, prev.ActionAt, now
			j.write(ctx, next, &back)
			return
		}
		if paas.Retryable(err) {
			j.log.Warn("stopping an app failed; it stays up and is looked at again", "app", t.app.ID, "err", err)
			back := next
			back.Status, back.Cause, back.ActionAt, back.LastStatusUpdate = StatusUp, "the stop failed: "+err.Error(), prev.ActionAt, now
			j.write(ctx, next, &back)
			return
		}
		failed := toError(next, "the stop failed: "+err.Error(), now)
		j.write(ctx, next, &failed)
		return
	}
	sent := next
	sent.StopSentAt = j.opts.Now()
	j.write(ctx, next, &sent)
	j.log.Info("app put to sleep", "app", t.app.ID, "cause", next.Cause)
}

// trafficSince says why the app must stay up, if a request came after the decision:
// this node's counts are exact, the others' are read from the store after the
// settle delay gave them time to flush.
func (j *Job) trafficSince(ctx context.Context, id string, decidedOn time.Time) string {
	la, busy := j.opts.Engine.LocalTraffic(id)
	if busy > 0 || la.After(decidedOn) {
		return "a request arrived while it was going to sleep"
	}
	if j.opts.SettleDelay == 0 {
		return ""
	}
	if access, err := j.opts.Store.LastAccess(ctx); err != nil || access[id].After(decidedOn) {
		return "a request arrived while it was going to sleep"
	}
	if counts, err := j.opts.Store.InFlight(ctx); err != nil || counts[id] > 0 {
		return "a request arrived while it was going to sleep"
	}
	return ""
}

// start wakes an app: it records WaitingForUp (with the action time the fail
// timeout counts from), then asks the platform. A start that failed for a passing
// reason is sent again at the next tick; the wake ask stays stored until it
// succeeds.
func (j *Job) start(ctx context.Context, t target, prev, next Record, now time.Time) {
	// A start sent to an app that is up restarts it on some platforms: whatever
	// the pass observed (a batch read may be seconds old), ask the platform again
	// right before, and start only an app it says is down.
	obs, err := j.opts.PaaS.Observe(ctx, t.app)
	if err != nil {
		j.apiErr.log(j.log, "observing an app before starting it failed; trying again at the next tick", fmt.Errorf("%s: %w", t.app.ID, err))
		return
	}
	if obs.State != paas.StateShouldBeDown {
		j.log.Debug("not starting an app the platform no longer reports down; looking again", "app", t.app.ID, "state", obs.State)
		_ = j.Ask(ctx, t.app.ID)
		return
	}
	if !j.verify(ctx) || !j.write(ctx, prev, &next) {
		return
	}
	err = j.opts.PaaS.Start(ctx, t.app)
	switch {
	case err == nil:
		j.log.Info("app woken", "app", t.app.ID, "cause", next.Cause)
		j.clearAsk(ctx, t.app.ID, now)
	case errors.Is(err, paas.ErrNeverDeployed):
		failed := toError(next, "the app was never deployed: it cannot be started", j.opts.Now())
		j.write(ctx, next, &failed)
		j.clearAsk(ctx, t.app.ID, now)
	case errors.Is(err, paas.ErrStartFailed), errors.Is(err, paas.ErrNotFound), errors.Is(err, paas.ErrAuth):
		failed := toError(next, "the start failed: "+err.Error(), j.opts.Now())
		j.write(ctx, next, &failed)
		j.clearAsk(ctx, t.app.ID, now)
	default:
		j.log.Warn("starting an app failed; trying again at the next tick", "app", t.app.ID, "err", err)
		retry := next
		retry.RetryStart = true // not accepted: Decide sends it again at the next look
		j.write(ctx, next, &retry)
	}
}

func (j *Job) verify(ctx context.Context) bool {
	if j.opts.Fence == nil {
		return true
	}
	if err := j.opts.Fence.VerifyLeader(ctx); err != nil {
		j.log.Warn("not acting on an app: this node's leadership could not be confirmed", "err", err)
		return false
	}
	return true
}

// write stores next (and a history entry when the status changed) and makes this
// node see it at once. It reports whether the record was stored.
func (j *Job) write(ctx context.Context, prev Record, next *Record) bool {
	// Each write gets the next revision, by which nodes order the records they
	// see whatever the clocks say.
	next.Revision = prev.Revision + 1
	if err := j.opts.Store.PutRecord(ctx, *next); err != nil {
		if errors.Is(err, ErrStaleTerm) {
			j.log.Warn("a newer leader owns this app's record; leaving it", "app", next.AppID)
		} else {
			j.apiErr.log(j.log, "writing a record failed", err)
		}
		return false
	}
	// This node acts on the record at once (before it says so in the log).
	j.opts.Engine.Apply(*next)
	if prev.Status != next.Status {
		t := Transition{AppID: next.AppID, From: prev.Status, To: next.Status, Cause: next.Cause, At: next.LastStatusUpdate}
		if err := j.opts.Store.AppendHistory(ctx, t); err != nil {
			j.apiErr.log(j.log, "writing history failed", err)
		}
		level := j.log.Info
		if next.Status == StatusError {
			level = j.log.Error
		}
		level("app status changed", "app", next.AppID, "from", prev.Status, "to", next.Status, "cause", next.Cause)
	}
	return true
}

func (j *Job) clearAsk(ctx context.Context, id string, upTo time.Time) {
	if err := j.opts.Store.ClearWake(ctx, id, upTo); err != nil {
		j.apiErr.log(j.log, "clearing a wake ask failed", err)
	}
}

// unmanaged handles an app no route manages any more: it is woken if it sleeps, so
// that whoever reaches it directly finds it up, and forgotten after unmanagedGrace.
// It reports whether the step should go on (to wake it).
func (j *Job) unmanaged(ctx context.Context, term uint64, t target, rec Record, now time.Time) bool {
	j.mu.Lock()
	since, ok := j.unmanagedSince[t.app.ID]
	if !ok {
		since = now
		j.unmanagedSince[t.app.ID] = now
	}
	j.mu.Unlock()
	if rec.Status.Asleep() || rec.Status == StatusWaitingForInit {
		return true // look at it, and wake it: see input()
	}
	if now.Sub(since) < unmanagedGrace {
		return false
	}
	if err := j.opts.Store.DeleteRecord(ctx, t.app.ID, term); err != nil {
		j.apiErr.log(j.log, "forgetting an unmanaged app failed", err)
		return false
	}
	j.mu.Lock()
	delete(j.unmanagedSince, t.app.ID)
	j.mu.Unlock()
	j.log.Info("forgot an app no route manages any more", "app", t.app.ID, "status", rec.Status)
	return false
}

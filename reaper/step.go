package reaper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reapergw/reaper/paas"
)

// step looks at one app under its lock: observe, decide, act. Each writes what it
// found or did in the app's record.
func (j *Job) step(ctx context.Context, term uint64, t target, pd *passData) {
	termCtx := ctx
	ctx, lock, ok := j.lockApp(ctx, term, t.app.ID)
	if !ok {
		return
	}
	defer lock.release(ctx)
	rec, now, ok := j.current(ctx, term, t)
	if !ok {
		return
	}
	if !t.managed && !j.unmanaged(ctx, term, t, rec, now) {
		return
	}
	in, ok := j.observe(ctx, term, t, rec, pd, now)
	if !ok {
		return
	}
	if n := in.Observation.Name; n != "" {
		rec.Name = n // the app's own name, when its platform has one
	}
	in.Prewake = j.prewakeDue(ctx, t, now)
	in.Group = j.groupInput(t, rec, pd, now)
	j.prewakeOutcome(ctx, t, rec, in, now)
	next, act := Decide(rec, in, now, t.policy)
	next, act = j.busyGate(termCtx, t, rec, next, act, now) // busy.go: a worker's busy_url
	next.Term = term
	j.act(ctx, lock, t, rec, next, act, in, pd, now)
	if act == ActionNone {
		j.lookWhenDue(termCtx, next, now)
	}
}

// lockApp takes the app's lock in the store for this term, kept while the step
// runs: the returned context ends if it is lost (a newer leader took it over).
// false: another decider has it (its result reaches us through the store), or
// the store failed. It takes the lock as this job's holder: no other step of the
// app runs (schedule), so a lock of this job and term found in the store is one
// a store outage made it lose track of, and it is taken back at once.
func (j *Job) lockApp(ctx context.Context, term uint64, id string) (context.Context, *heldLock, bool) {
	lock, err := j.opts.Store.LockAs(ctx, id, term, j.holder, j.opts.LockTTL)
	if errors.Is(err, ErrLocked) {
		return nil, nil, false
	}
	if err != nil {
		j.apiErr.log(j.log, "taking an app's lock failed", err)
		return nil, nil, false
	}
	ctx, stopKeeping := j.keepLock(ctx, lock, id)
	return ctx, &heldLock{j: j, lock: lock, app: id, stopKeeping: stopKeeping}, true
}

// heldLock is an app's lock while its step runs.
type heldLock struct {
	j           *Job
	lock        Lock
	app         string
	stopKeeping func()
}

// stillOurs extends the lock now, and reports whether it is still ours: a newer
// leader may have taken it over (a deposed leader's lock is, at once). Called
// after the record of a start or a stop is written and right before the
// platform is asked: a newer leader that takes the lock over later reads that
// record, and knows an action may be on its way.
func (l *heldLock) stillOurs(ctx context.Context) bool {
	return l.lock.Extend(ctx, l.j.opts.LockTTL) == nil
}

// release stops keeping the lock and frees it.
func (l *heldLock) release(ctx context.Context) {
	l.stopKeeping()
	l.j.release(context.WithoutCancel(ctx), l.lock, l.app)
}

// current reads the app's record (a new one in WaitingForInit if it has none) and
// the time of the step. false: the store failed, or a newer leader wrote the
// record and we are no longer the one to act.
func (j *Job) current(ctx context.Context, term uint64, t target) (Record, time.Time, bool) {
	rec, ok, err := j.opts.Store.Record(ctx, t.app.ID)
	if err != nil {
		j.apiErr.log(j.log, "reading a record failed", err)
		return Record{}, time.Time{}, false
	}
	now := j.opts.Now()
	if !ok {
		rec = Record{AppID: t.app.ID, Status: StatusWaitingForInit, LastStatusUpdate: now}
	}
	if rec.Term > term {
		return Record{}, time.Time{}, false
	}
	rec.Owner, rec.Name = t.app.Owner, t.name
	return rec, now, true
}

// observe gathers what Decide needs besides the record: the platform's word on the
// app (from the pass's batch when it has it), the traffic and the wake asks, and
// the last deployment when Decide would look at it. false: the app cannot be
// decided now (observeFailed recorded or logged why).
func (j *Job) observe(ctx context.Context, term uint64, t target, rec Record, pd *passData, now time.Time) (Input, bool) {
	obs, batched := pd.obs[t.app]
	if !batched {
		var ok bool
		if obs, ok = j.observeApp(ctx, term, t, rec, now); !ok {
			return Input{}, false
		}
	}
	in := j.input(t.app.ID, obs, pd)
	if !t.managed {
		in.WakeAsked, in.Busy = true, true // wake it, never stop it
	}
	rd, ok := j.opts.PaaS.(paas.DeploymentReader)
	if !ok || !NeedsDeployment(rec, obs.State, in, now, t.policy) {
		return in, true
	}
	if batched { // a batch observation is cheap and partial: look closer before acting
		if in.Observation, ok = j.observeApp(ctx, term, t, rec, now); !ok {
			return Input{}, false
		}
	}
	var dep *paas.Deployment
	err := j.timed("last_deployment", func() (err error) { dep, err = rd.LastDeployment(ctx, t.app); return err })
	if err != nil {
		j.apiErr.log(j.log, "reading an app's last deployment failed; trying again at the next tick", fmt.Errorf("%s: %w", t.app.ID, err))
		return Input{}, false
	}
	if dep != nil && dep.State == paas.DeploymentOK && in.Observation.State == paas.StateShouldBeDown {
		// The state was read before the deployment: a start that ended in
		// between looks like an app stopped right after it woke. Read the state
		// again, after the deployment, so that it cannot be older.
		if in.Observation, ok = j.observeApp(ctx, term, t, rec, now); !ok {
			return Input{}, false
		}
	}
	in.Observation.Deployment = dep
	return in, true
}

// observeApp asks the platform about the app; false when it could not say.
func (j *Job) observeApp(ctx context.Context, term uint64, t target, rec Record, now time.Time) (paas.Observation, bool) {
	var obs paas.Observation
	err := j.timed("observe", func() (err error) { obs, err = j.opts.PaaS.Observe(ctx, t.app); return err })
	if err != nil {
		j.observeFailed(ctx, term, rec, err, now)
		return paas.Observation{}, false
	}
	return obs, true
}

// act carries out Decide's action and records the outcome; a wake ask that the
// app's new status satisfies is cleared.
func (j *Job) act(ctx context.Context, lock *heldLock, t target, rec, next Record, act Action, in Input, pd *passData, now time.Time) {
	switch act {
	case ActionStop:
		j.stop(ctx, lock, t, rec, next, in, pd.settings)
	case ActionStart:
		j.start(ctx, lock, t, rec, next, now)
	default:
		j.write(ctx, rec, &next)
	}
	if _, asked := pd.asks[t.app.ID]; asked && act != ActionStart {
		if st := next.Status; st == StatusUp || st == StatusError {
			// Awake (or hands off): the ask is satisfied.
			j.clearAsk(ctx, t.app.ID, now)
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
// lock's TTL runs out; past that (a store outage), this job takes the lock back at
// its next step of the app (Locker.LockAs), and the TTL frees it for the others.
func (j *Job) release(ctx context.Context, lock Lock, app string) {
	wait := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := lock.Release(rctx)
		cancel()
		if err == nil {
			return
		}
		if attempt == 4 {
			// Not throttled with the other store errors: rare (a step cut by an
			// outage), and it says why the app waits.
			j.log.Warn("releasing an app's lock failed; this leader takes it back at its next look, others wait for its ttl", "app", app, "err", err)
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
	askedAt, asked := pd.asks[id]
	return Input{Observation: obs, LastAccess: la, Busy: busy > 0 || pd.inFlight[id] > 0, WakeAsked: asked, WakeAskedAt: askedAt}
}

// lookWhenDue looks at the app again when a start is due that the next tick
// would send late: a start not known to be accepted (its leader may have died
// before the call went out), which Decide sends again after
// UncertainStartGrace, or a start held back by the back-off of a failed boot.
// ctx is the term's: a look asked after the term ended is dropped.
func (j *Job) lookWhenDue(ctx context.Context, rec Record, now time.Time) {
	var due time.Duration
	switch {
	case rec.Boots.backingOff(now) && (rec.Status == StatusWaitingForUp || rec.Status == StatusDown):
		due = rec.Boots.RetryAt.Sub(now)
	case rec.Status == StatusWaitingForUp && rec.RetryStart:
		due = rec.StartSentAt.Add(UncertainStartGrace).Sub(now)
	default:
		return
	}
	if due <= 0 || due >= j.opts.FastInterval {
		return // due now (the next tick is soon enough), or later than the next tick
	}
	time.AfterFunc(due, func() {
		if ctx.Err() == nil { // still this term's leader
			_ = j.Ask(ctx, rec.AppID)
		}
	})
}

// observeFailed records what an observation error means (afterObserveError); an
// error that changes nothing is logged, and retried at the next tick.
func (j *Job) observeFailed(ctx context.Context, term uint64, rec Record, err error, now time.Time) {
	next, changed := afterObserveError(rec, err, now)
	if !changed {
		if !errors.Is(err, paas.ErrNotFound) {
			j.apiErr.log(j.log, "observing an app failed; trying again at the next tick", fmt.Errorf("%s: %w", rec.AppID, err))
		}
		return
	}
	next.Term = term
	j.write(ctx, rec, &next)
}

// stop puts an idle app to sleep: it marks it WaitingForShutdown first, so that
// every node holds new requests instead of sending them to an app about to stop,
// then checks its traffic once more and only then asks the platform.
func (j *Job) stop(ctx context.Context, lock *heldLock, t target, prev, next Record, in Input, settings Settings) {
	if settings.DryRun || settings.KillSwitch {
		if settings.DryRun {
			j.log.Info("dry run: would put an idle app to sleep", "app", t.app.ID, "cause", next.Cause)
		}
		keep := withheld(prev, next)
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
	// An operator's forced stop of an app stuck waking cuts nothing (its
	// requests are held); of an app in Error, it waits for the requests at it to
	// end (the ask stays, for the next look), but not for the traffic to stop:
	// the operator asked.
	stuck := next.SleepAsk.stuckStop(next)
	switch {
	case stuck && next.SleepAsk.From == StatusError && j.inFlight(ctx, t.app.ID):
		back := stuckStopWithdrawn(prev, next, j.opts.Now())
		j.write(ctx, next, &back)
		return
	case !stuck && j.trafficSince(ctx, t.app.ID, in.LastAccess):
		back := stopWithdrawn(next, prev.ActionAt, j.opts.Now())
		j.write(ctx, next, &back)
		return
	}
	if !j.verify(ctx) || !lock.stillOurs(ctx) {
		return // the next leader sees a stop never sent, and decides again
	}
	if pr, ok := j.opts.PaaS.(paas.Pricer); ok { // the memory it held awake, for the savings
		var c paas.Cost
		if err := j.timed("cost", func() (err error) { c, err = pr.Cost(ctx, t.app); return err }); err == nil && c.MemoryBytes > 0 {
			next.MemoryBytes = c.MemoryBytes
		}
	}
	err := j.timed("stop", func() error { return j.opts.PaaS.Stop(ctx, t.app) })
	if err != nil && !errors.Is(err, paas.ErrNotShutdownable) && paas.Retryable(err) {
		j.log.Warn("stopping an app failed; it stays up and is looked at again", "app", t.app.ID, "err", err)
	}
	after := afterStop(next, prev.ActionAt, err, j.opts.Now())
	if stuck {
		after = afterStuckStop(prev, next, err, j.opts.Now())
	}
	if err != nil && after.Status != StatusError {
		// A stop refused (for now or for good) changes nothing for the apps
		// it concerns: a look at them now would be a look at its group, this
		// app included, and send the refused stop again at once, without end.
		// It is looked at again at the next pass.
		j.writeRecord(ctx, next, &after, false)
		return
	}
	j.write(ctx, next, &after)
	if err == nil {
		j.log.Info("app put to sleep", "app", t.app.ID, "cause", next.Cause)
		cause := "idle"
		if prev.SleepAsk.Pending(prev) {
			cause = "operator"
		}
		j.observer().Slept(t.app.ID, cause)
	}
}

// trafficSince reports whether a request came after the decision: this node's
// counts are exact, the others' are read from the store after the settle delay
// gave them time to flush. A store that cannot be read counts as traffic.
func (j *Job) trafficSince(ctx context.Context, id string, decidedOn time.Time) bool {
	la, busy := j.opts.Engine.LocalTraffic(id)
	if busy > 0 || la.After(decidedOn) {
		return true
	}
	if j.opts.SettleDelay == 0 {
		return false
	}
	if access, err := j.opts.Store.LastAccess(ctx); err != nil || access[id].After(decidedOn) {
		return true
	}
	if counts, err := j.opts.Store.InFlight(ctx); err != nil || counts[id] > 0 {
		return true
	}
	return false
}

// inFlight reports whether a request or connection is at the app now: this
// node's exact count, the others' from the store (after the settle delay). A
// store that cannot be read counts as busy.
func (j *Job) inFlight(ctx context.Context, id string) bool {
	if _, busy := j.opts.Engine.LocalTraffic(id); busy > 0 {
		return true
	}
	if j.opts.SettleDelay == 0 {
		return false
	}
	counts, err := j.opts.Store.InFlight(ctx)
	return err != nil || counts[id] > 0
}

// start wakes an app: it records WaitingForUp (with the action time the fail
// timeout counts from), then asks the platform. A start that failed for a passing
// reason is sent again at the next tick; the wake ask stays stored until it
// succeeds.
func (j *Job) start(ctx context.Context, lock *heldLock, t target, prev, next Record, now time.Time) {
	// A start sent to an app that is up restarts it on some platforms: whatever
	// the pass observed (a batch read may be seconds old), ask the platform again
	// right before, and start only an app it says is down.
	var obs paas.Observation
	err := j.timed("observe", func() (err error) { obs, err = j.opts.PaaS.Observe(ctx, t.app); return err })
	if err != nil {
		j.apiErr.log(j.log, "observing an app before starting it failed; trying again at the next tick", fmt.Errorf("%s: %w", t.app.ID, err))
		return
	}
	if obs.State != paas.StateShouldBeDown {
		j.log.Debug("not starting an app the platform no longer reports down; looking again", "app", t.app.ID, "state", obs.State)
		_ = j.Ask(ctx, t.app.ID)
		return
	}
	if !j.verify(ctx) || !j.write(ctx, prev, &next) || !lock.stillOurs(ctx) {
		return // a newer leader finds the start not known to be accepted, and resolves it
	}
	err = j.timed("start", func() error { return j.opts.PaaS.Start(ctx, t.app) })
	after, served := afterStart(next, err, j.opts.Now())
	switch {
	case err == nil:
		j.log.Info("app woken", "app", t.app.ID, "cause", next.Cause)
		j.observer().Woke(t.app.ID, wakeCauseLabel(next.Cause))
	case !served:
		j.log.Warn("starting an app failed; trying again at the next tick", "app", t.app.ID, "err", err)
	}
	if after != next {
		j.write(ctx, next, &after)
	}
	if served {
		j.clearAsk(ctx, t.app.ID, now)
	}
	if err == nil {
		j.noteArrival(ctx, t, next)
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

// write commits next (commit.go: the store keeps it, and a history entry when
// the status changed; this node tells it, then sees it at once). It reports
// whether the record was stored.
func (j *Job) write(ctx context.Context, prev Record, next *Record) bool {
	return j.writeRecord(ctx, prev, next, true)
}

// writeRecord is write; related false leaves the apps the change concerns
// (lookAtRelated) to the next pass.
func (j *Job) writeRecord(ctx context.Context, prev Record, next *Record, related bool) bool {
	*next = accountSleep(prev, *next)
	if err := j.opts.Engine.commit(ctx, j.opts.Store, prev, next, nil); err != nil {
		if errors.Is(err, ErrStaleTerm) {
			j.log.Warn("a newer leader owns this app's record; leaving it", "app", next.AppID)
		} else {
			j.apiErr.log(j.log, "writing a record failed", err)
		}
		return false
	}
	if prev.Status == StatusWaitingForUp && next.Status == StatusUp && next.Wake != nil {
		// The phases as far as the platform goes are in the history entry of
		// the change to Up (UpPhases); the first node to answer a held request
		// adds the last one (Engine.wakeAnswered).
		for _, ph := range next.Wake.Durations() {
			j.observer().WakePhase(next.AppID, ph.Phase, time.Duration(ph.Seconds*float64(time.Second)))
		}
	}
	if prev.Status != next.Status { // the store wrote its history entry with it
		level := j.log.Info
		if next.Status == StatusError {
			level = j.log.Error
		}
		level("app status changed", "app", next.AppID, "from", prev.Status, "to", next.Status, "cause", next.Cause)
	}
	if related {
		j.lookAtRelated(ctx, prev, *next) // after the line above: the logs keep the order of the changes
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

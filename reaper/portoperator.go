package reaper

import (
	"context"
	"errors"
	"time"
)

// The port's operators' side: what an operators' edge (the admin API,
// admin*.go) does to an app beyond reading it (Managed, Record, Held,
// OpenEverywhere, Awake, ETA, OpenEvents): change its record under its lock,
// ask for its wake whatever this node asked before, tell an action that
// changes no record. A record is still written only through commit
// (commit.go), which Change calls as the job does.

// ChangeError is a failure of the store during Engine.Change.
type ChangeError struct {
	// Step is what failed: "lock" (the app's lock could not be taken), "read"
	// (its record could not be read), "write" (the changed record could not
	// be written).
	Step string
	Err  error
}

func (e *ChangeError) Error() string {
	return "reaper: the app's record (" + e.Step + "): " + e.Err.Error()
}

func (e *ChangeError) Unwrap() error { return e.Err }

// Change changes an app's record for an operator. Under the app's lock (an
// operator's: term 0, never taken over; waited for up to lockWait while the
// job holds it), f changes the record read from the store (WaitingForInit
// when there is none), and the result is committed (commit.go): written, told
// with the action told makes of it (none when told is nil) before the lock is
// released, so that it comes before whatever the job does about it, then seen
// by this node. Once the lock is released, the job is asked to look at the
// app. f refuses by returning an error: nothing is written, and Change returns
// that error as it is. Its other errors are ErrLocked (the lock stayed taken
// past lockWait) and *ChangeError. It blocks on the store, the lock and the
// job's look (all bounded by ctx).
func (e *Engine) Change(ctx context.Context, id string, f func(rec *Record, now time.Time) error,
	told func(next Record) Transition) (Record, error) {
	lock, err := e.operatorLock(ctx, id)
	if errors.Is(err, ErrLocked) {
		return Record{}, err
	}
	if err != nil {
		return Record{}, &ChangeError{Step: "lock", Err: err}
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			lock.Release(context.WithoutCancel(ctx))
		}
	}
	defer unlock()
	rec, ok, err := e.store.Record(ctx, id)
	if err != nil {
		return Record{}, &ChangeError{Step: "read", Err: err}
	}
	if !ok {
		rec = Record{AppID: id, Status: StatusWaitingForInit}
	}
	next := rec
	if err := f(&next, time.Now()); err != nil {
		return Record{}, err
	}
	var action *Transition
	if told != nil {
		t := told(next)
		action = &t
	}
	if err := e.commit(ctx, e.store, rec, &next, action); err != nil {
		return Record{}, &ChangeError{Step: "write", Err: err}
	}
	unlock() // before the look: the job must find the lock free
	e.asks.look(ctx, id)
	return next, nil
}

// lockWait is how long an operator's change waits for the app's lock: the job
// holds it for one look (an observation, perhaps a platform call), which the
// action just before may well have asked for.
const lockWait = 5 * time.Second

// operatorLock takes the app's lock for an operator (term 0, never taken
// over), waiting up to lockWait while another holder has it.
func (e *Engine) operatorLock(ctx context.Context, id string) (Lock, error) {
	deadline := time.Now().Add(lockWait)
	wait := 10 * time.Millisecond
	for {
		lock, err := e.store.Lock(ctx, id, 0, 10*time.Second)
		if !errors.Is(err, ErrLocked) || time.Now().Add(wait).After(deadline) {
			return lock, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// AskWakeNow asks for the app's wake whatever this node asked before: an
// operator's ask is never coalesced away. Nothing for an app no route
// manages. It never waits (the ask is stored and sent in the background).
func (e *Engine) AskWakeNow(appID string) {
	if a := e.app(appID); a != nil {
		e.asks.askNow(a, time.Now())
	}
}

// TellAction tells an operator's action that changes no record (a wake asked),
// as Change tells one that does: to the history, the webhooks and the event
// stream. It is told whatever happens to ctx (the action was done), within
// tellTimeout, and waits for that.
func (e *Engine) TellAction(ctx context.Context, t Transition) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tellTimeout)
	defer cancel()
	rec, _ := e.Record(t.AppID)
	e.tellAction(ctx, t, rec.Name)
}

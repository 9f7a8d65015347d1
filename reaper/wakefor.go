package reaper

import (
	"context"
	"errors"
	"time"
)

// ErrNotManaged is WakeFor's error for an id that no route of this node manages.
var ErrNotManaged = errors.New("reaper: no route manages this app")

// WakeFor asks for the app to be woken on behalf of by (a wake trigger:
// "trigger redis-queue"), through the operator's path (AdminAPI.wake): an
// EventWakeAsk entry in the history naming by, then an ask that is never
// coalesced away, stored and passed to the job. The job wakes the app as for
// any ask, and the woken app's idle clock starts at its LastUpAt, so it gets a
// full grace period.
//
// An app that is Up or WaitingForUp is left alone (asked false, no history
// entry): a trigger that keeps finding work while its worker runs must not
// fill the history. It does not block on the job (the ask is sent in the
// background); ctx bounds the history write. ErrNotManaged: no route on this
// node manages the app.
//
// id may name a group: then each member is asked as above, in start order,
// and asked is true when any was.
func (e *Engine) WakeFor(ctx context.Context, id, by string) (asked bool, err error) {
	managed := map[string]bool{} // one look at the managed apps for every member
	for _, m := range e.Managed() {
		managed[m.App.ID] = true
	}
	g, ok := e.Group(id)
	if !ok {
		return e.wakeFor(ctx, id, by, managed)
	}
	for _, app := range e.StartOrder(g) {
		one, err := e.wakeFor(ctx, app, by, managed)
		if err != nil && !errors.Is(err, ErrNotManaged) {
			return asked, err
		}
		asked = asked || one
	}
	return asked, nil
}

// wakeFor is WakeFor for one app, among the managed apps of managed: the
// operator's wake (TellAction, then AskWakeNow) named after by.
func (e *Engine) wakeFor(ctx context.Context, appID, by string, managed map[string]bool) (asked bool, err error) {
	if e.app(appID) == nil || !managed[appID] {
		return false, ErrNotManaged
	}
	rec, _ := e.Record(appID)
	if rec.Status == StatusUp || rec.Status == StatusWaitingForUp {
		return false, nil
	}
	by = operatorName(by)
	// In the history before the ask, as an operator's: the job must not take
	// it for a visit, and it comes before what the job does about it.
	e.TellAction(ctx, Transition{AppID: appID, From: rec.Status, To: rec.Status, At: time.Now(), Kind: EventWakeAsk, By: by, Cause: by})
	e.AskWakeNow(appID)
	return true, nil
}

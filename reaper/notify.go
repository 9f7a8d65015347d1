package reaper

import "context"

// Notifier is told of what happens to the apps, where it happens, for the
// webhooks to announce: every change of status (written by the leader's job, or
// by an operator's reset), an operator's actions (hold, release, sleep, wake),
// a hold that ran out by itself, and a wake's phases once the app answered its
// first held request (on the node that answered it). appName is the app's name
// when the node knows it.
//
// Notify is called after the change was written; it blocks until the event is
// queued in the store (or ctx ends), so that the leader goes on only once a
// successor would find it. It reports failures itself (logs, metrics).
type Notifier interface {
	Notify(ctx context.Context, t Transition, appName string)
}

// holdExpired returns next's hold if it ran out by itself between the two looks
// at the app that prev and next record (their LastCheckAt): each look moves the
// window on, so an expiry is told once, by the first look after it, whichever
// leader makes it. A hold that an operator ended (ReleasedBy) has its own event.
func holdExpired(prev, next Record) *KeepWarm {
	h := next.Hold
	if h == nil || h.ReleasedBy != "" || !next.LastCheckAt.After(prev.LastCheckAt) {
		return nil
	}
	if h.Until.After(prev.LastCheckAt) && !h.Until.After(next.LastCheckAt) {
		return h
	}
	return nil
}

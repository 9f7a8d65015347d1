package reaper

import (
	"context"
	"sync"
	"time"
)

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

// toldWait bounds how long a wake's first answer waits for the change to Up that
// released it to be told on this node: on a node whose job did not write that
// change (a follower), it is not told there, and the wake is told after this.
const toldWait = 2 * time.Second

// toldUp is the wake (its Wake.AskedAt, unix nanoseconds) whose change to Up
// this node last told the notifier, so that what that change causes (the wake's
// first answer, told by the request that got it) is told after it: the held
// requests are released as soon as the record is applied, which may be before
// the job that wrote it has told it.
type toldUp struct {
	mu    sync.Mutex
	asked int64
	next  chan struct{} // closed and replaced at each set
}

func (t *toldUp) set(asked int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.asked = asked
	if t.next != nil {
		close(t.next)
		t.next = nil
	}
}

// wait returns once the change to Up of the wake asked at asked was told, after
// limit, or when ctx ends.
func (t *toldUp) wait(ctx context.Context, asked int64, limit time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		t.mu.Lock()
		if t.asked == asked {
			t.mu.Unlock()
			return
		}
		if t.next == nil {
			t.next = make(chan struct{})
		}
		next := t.next
		t.mu.Unlock()
		select {
		case <-next:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

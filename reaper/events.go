package reaper

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one entry of a node's event stream (the admin API's /api/events): a
// change of status or of a hold seen in the records (every node sees every
// app's), or an action or a wake's phases on this node.
type Event struct {
	// ID orders the events of one node; a client that reconnects passes the last
	// it saw (Last-Event-ID) to get what it missed, if the node still has it.
	ID uint64 `json:"id"`
	// Type is "status" for a change of status, else the Transition's Kind.
	Type string `json:"type"`
	Transition
	// Seconds is, for a change of status, how long the app was in the previous
	// one; for a wake, how long it took from the ask to its last phase.
	Seconds float64 `json:"seconds,omitempty"`
}

// EventReplay is how many recent events a node keeps for late subscribers.
const EventReplay = 64

// eventSubBuffer bounds a subscriber's backlog; one that falls further behind is
// dropped (its channel closed) and reconnects with Last-Event-ID.
const eventSubBuffer = 256

// eventLog keeps the node's recent events and hands new ones to subscribers.
type eventLog struct {
	streams atomic.Int64 // the admin API's event streams open on this node

	mu     sync.Mutex
	ring   [EventReplay]Event
	lastID uint64
	subs   map[chan Event]struct{}
}

// publish gives t an id and hands it out; it never blocks.
func (l *eventLog) publish(t Transition, seconds float64) {
	typ := t.Kind
	if typ == "" {
		typ = "status"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastID++
	ev := Event{ID: l.lastID, Type: typ, Transition: t, Seconds: seconds}
	l.ring[ev.ID%EventReplay] = ev
	for ch := range l.subs {
		select {
		case ch <- ev:
		default:
			delete(l.subs, ch)
			close(ch)
		}
	}
}

// subscribe returns the kept events after the id after (all kept ones when it
// is 0 or no longer kept), oldest first, and a channel of the next ones. The
// channel is closed when the subscriber falls behind or cancel is called.
func (l *eventLog) subscribe(after uint64) (recent []Event, next <-chan Event, cancel func()) {
	ch := make(chan Event, eventSubBuffer)
	l.mu.Lock()
	defer l.mu.Unlock()
	first := uint64(1)
	if l.lastID > EventReplay {
		first = l.lastID - EventReplay + 1
	}
	if after >= first && after <= l.lastID {
		first = after + 1
	}
	for id := first; id <= l.lastID; id++ {
		recent = append(recent, l.ring[id%EventReplay])
	}
	if l.subs == nil {
		l.subs = map[chan Event]struct{}{}
	}
	l.subs[ch] = struct{}{}
	return recent, ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := l.subs[ch]; ok {
			delete(l.subs, ch)
			close(ch)
		}
	}
}

// Subscribe is the node's event stream: see eventLog.subscribe.
func (e *Engine) Subscribe(after uint64) (recent []Event, next <-chan Event, cancel func()) {
	return e.events.subscribe(after)
}

// MaxEventStreams bounds the event streams open on one node (OpenEvents).
const MaxEventStreams = 64

// OpenEvents is Subscribe for a long-lived reader (the admin API's event
// stream), one of at most MaxEventStreams open on the node: ok is false when
// that many are. cancel ends the subscription and gives its place back; call
// it once. It never waits.
func (e *Engine) OpenEvents(after uint64) (recent []Event, next <-chan Event, cancel func(), ok bool) {
	streams := &e.events.streams
	if streams.Add(1) > MaxEventStreams {
		streams.Add(-1)
		return nil, nil, nil, false
	}
	recent, next, unsubscribe := e.events.subscribe(after)
	return recent, next, func() {
		unsubscribe()
		streams.Add(-1)
	}, true
}

// recordEvents publishes what changed from cur to rec, both records of app id:
// its status, its hold.
func (e *Engine) recordEvents(cur, rec *Record) {
	if cur.Status != rec.Status {
		e.tell(context.Background(), statusTransition(cur, rec), rec.Name, rec.LastStatusUpdate.Sub(cur.LastStatusUpdate).Seconds(), toStream)
	}
	switch old, now := cur.Hold, rec.Hold; {
	case now == nil || (old != nil && *old == *now):
	case old == nil || !now.Since.Equal(old.Since):
		e.tell(context.Background(), Transition{AppID: rec.AppID, From: rec.Status, To: rec.Status, Cause: now.Reason,
			At: now.Since, Kind: EventHold, By: now.By, Hold: now}, rec.Name, 0, toStream)
	case now.Until.Before(old.Until) && !now.Until.After(time.Now()):
		e.tell(context.Background(), Transition{AppID: rec.AppID, From: rec.Status, To: rec.Status, Cause: "hold released",
			At: now.Until, Kind: EventRelease, By: now.ReleasedBy, Hold: now}, rec.Name, 0, toStream)
	}
}

// wakeAnswered records, once per wake and node, the first held request the app
// answered: the wake's last phase, published and added to the app's history
// (in the background: a released request never waits on the store). On the
// node that wrote the change to Up, that change was told before any held
// request was released (commit); another node may tell this a moment before
// the leader queues it (docs/webhooks.md: order by at).
func (e *Engine) wakeAnswered(a *app, now time.Time) {
	rec := a.rec.Load()
	if rec == nil || rec.Wake == nil || rec.Wake.AskedAt.IsZero() {
		return
	}
	asked := rec.Wake.AskedAt.UnixNano()
	if prev := a.firstAnswer.Load(); prev == asked || !a.firstAnswer.CompareAndSwap(prev, asked) {
		return
	}
	w := *rec.Wake
	w.FirstAnswerAt = now
	if w.UpAt.IsZero() {
		w.UpAt = time.Unix(0, a.upSeen.Load())
	}
	t := Transition{AppID: a.id, From: rec.Status, To: rec.Status, At: now, Kind: EventWake, Node: e.opts.Node, Phases: &w,
		Cause: "first held request answered"}
	e.tell(context.Background(), t, rec.Name, w.Total().Seconds(), toStream)
	e.observer.WakePhase(a.id, PhaseFirstAnswer, now.Sub(w.UpAt))
	e.observer.WakePhase(a.id, "total", w.Total())
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), tellTimeout)
		defer cancel()
		e.tell(ctx, t, rec.Name, 0, toHistory|toWebhooks)
	}()
}

// statusTransition is the change of status from cur to rec, as the history,
// the event stream and webhooks give it: with the wake's phases when the app
// came up, with the operator who asked when it goes to sleep on their word.
func statusTransition(cur, rec *Record) Transition {
	t := Transition{AppID: rec.AppID, From: cur.Status, To: rec.Status, Cause: rec.Cause, At: rec.LastStatusUpdate}
	if rec.Status == StatusUp && cur.Status == StatusWaitingForUp && rec.Wake != nil {
		t.Phases = rec.Wake
	}
	if rec.Status == StatusWaitingForShutdown && rec.SleepAsk.Pending(*cur) {
		t.By = rec.SleepAsk.By
	}
	return t
}

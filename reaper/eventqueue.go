package reaper

import (
	"context"
	"time"
)

// EventQueue keeps the events that webhooks have yet to deliver: one queue per
// webhook (named by the webhook), ordered by the time each event was queued, and
// bounded (the oldest are dropped first). It lives in the store so that a leader
// that dies leaves its successor every event not yet delivered.
type EventQueue interface {
	// Enqueue appends ev to the queue, unless an event with ev.ID is in it
	// already: then nothing changes (so a call retried after a lost answer, or
	// the same event queued by two nodes, is queued once). When the queue then
	// holds more than limit events (at least 1), the oldest are dropped, and
	// dropped says how many.
	Enqueue(ctx context.Context, queue string, ev QueuedEvent, limit int) (dropped int, err error)
	// Pending returns the oldest events of the queue, oldest first, at most
	// limit (at least 1). An empty or unknown queue has none.
	Pending(ctx context.Context, queue string, limit int) ([]QueuedEvent, error)
	// Ack removes the event from the queue: delivered, or given up. An event no
	// longer in it is no error.
	Ack(ctx context.Context, queue, id string) error
}

// QueuedEvent is an event waiting in a webhook's queue: what happened to an app
// (a change of status or an action: the Transition), with the id and the type a
// webhook sends it with.
type QueuedEvent struct {
	// ID is unique to the event (a UUIDv7): the receiver's idempotency key, and
	// the key of Ack.
	ID string `json:"id"`
	// Type is the event's type as webhooks name it (status, error, hold, …).
	Type string `json:"type"`
	// AppName is the app's name, when the node that queued it knew it.
	AppName string `json:"app_name,omitempty"`
	// QueuedAt is when it was queued; a webhook gives up on it max_age later.
	QueuedAt time.Time `json:"queued_at"`
	Transition
}

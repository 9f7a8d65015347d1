package reaper

import (
	"context"
	"slices"
)

// memQueue is one webhook's queue of events, oldest first.
type memQueue struct {
	events []QueuedEvent   // never modified in place (see snapshotLocked)
	ids    map[string]bool // the ids in events
}

// Enqueue implements EventQueue.
func (s *MemStore) Enqueue(ctx context.Context, queue string, ev QueuedEvent, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	limit = max(limit, 1)
	s.mu.Lock()
	q := s.queueLocked(queue)
	if q.ids[ev.ID] {
		s.mu.Unlock()
		return 0, nil
	}
	q.events = append(q.events, ev)
	dropped := max(len(q.events)-limit, 0)
	for _, old := range q.events[:dropped] {
		delete(q.ids, old.ID)
	}
	q.events = q.events[dropped:]
	q.ids[ev.ID] = true
	s.gen++
	s.mu.Unlock()
	s.saveSoon()
	return dropped, nil
}

// Pending implements EventQueue.
func (s *MemStore) Pending(ctx context.Context, queue string, limit int) ([]QueuedEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queue]
	if q == nil {
		return nil, nil
	}
	n := min(max(limit, 1), len(q.events))
	return slices.Clone(q.events[:n]), nil
}

// Ack implements EventQueue.
func (s *MemStore) Ack(ctx context.Context, queue, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	q := s.queues[queue]
	if q == nil || !q.ids[id] {
		s.mu.Unlock()
		return nil
	}
	// The oldest event is the one usually done with: dropping it is a reslice.
	if i := slices.IndexFunc(q.events, func(ev QueuedEvent) bool { return ev.ID == id }); i == 0 {
		q.events[0] = QueuedEvent{} // let its strings go
		q.events = q.events[1:]
	} else {
		q.events = slices.Delete(q.events, i, i+1)
	}
	delete(q.ids, id)
	if len(q.events) == 0 {
		delete(s.queues, queue)
	}
	s.gen++
	s.mu.Unlock()
	s.saveSoon()
	return nil
}

// queueLocked returns the named queue, made if missing. s.mu is held.
func (s *MemStore) queueLocked(name string) *memQueue {
	q := s.queues[name]
	if q == nil {
		q = &memQueue{ids: map[string]bool{}}
		s.queues[name] = q
	}
	return q
}

package reaper

import (
	"context"
	"slices"
	"sync"
)

// Watch implements RecordWatcher. It registers changed and returns at once; changed
// is then called, from one goroutine per watcher, with the id of each app whose
// record was put or deleted, until ctx ends.
//
// A slow callback never stalls PutRecord: ids wait in a per-watcher set, so a burst
// of changes to one app while the callback runs makes one call, not one per change
// (callers re-read the record anyway). The set holds at most one entry per app, so
// nothing is dropped and memory stays bounded.
func (s *MemStore) Watch(ctx context.Context, changed func(appID string)) {
	if ctx.Err() != nil {
		return
	}
	w := &memWatcher{pending: map[string]struct{}{}, signal: make(chan struct{}, 1)}
	s.mu.Lock()
	s.watchers = append(slices.Clip(s.watchers), w)
	s.mu.Unlock()
	go func() {
		defer s.removeWatcher(w)
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.signal:
			}
			w.mu.Lock()
			batch := w.pending
			w.pending = make(map[string]struct{}, len(batch))
			w.mu.Unlock()
			for app := range batch {
				if ctx.Err() != nil {
					return
				}
				changed(app)
			}
		}
	}()
}

type memWatcher struct {
	mu      sync.Mutex
	pending map[string]struct{}
	signal  chan struct{} // capacity 1: "pending is not empty"
}

// notify queues appID for every watcher without blocking.
func notify(watchers []*memWatcher, appID string) {
	for _, w := range watchers {
		w.mu.Lock()
		w.pending[appID] = struct{}{}
		w.mu.Unlock()
		select {
		case w.signal <- struct{}{}:
		default: // already signalled
		}
	}
}

func (s *MemStore) removeWatcher(w *memWatcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A new slice, since a PutRecord may be iterating over the old one.
	s.watchers = slices.DeleteFunc(slices.Clone(s.watchers), func(x *memWatcher) bool { return x == w })
}

package paas

import (
	"context"
	"sync"
)

// Watchers is a driver's half of Watcher: the callbacks registered by Watch,
// called by Notify from the driver's own goroutine. The zero value is ready to
// use; a Watchers must not be copied after first use.
type Watchers struct {
	mu     sync.Mutex
	closed bool
	next   uint64
	fns    map[uint64]func(appID string)
}

// Add registers changed until ctx ends or Close is called, and returns at once.
// It does nothing after Close.
func (w *Watchers) Add(ctx context.Context, changed func(appID string)) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	if w.fns == nil {
		w.fns = map[uint64]func(string){}
	}
	id := w.next
	w.next++
	w.fns[id] = changed
	w.mu.Unlock()
	context.AfterFunc(ctx, func() {
		w.mu.Lock()
		delete(w.fns, id)
		w.mu.Unlock()
	})
}

// Notify calls every callback with each of ids, on the caller's goroutine and
// outside the lock (callbacks may observe the driver). The caller must hold no
// lock a callback could need.
func (w *Watchers) Notify(ids ...string) {
	if len(ids) == 0 {
		return
	}
	w.mu.Lock()
	fs := make([]func(string), 0, len(w.fns))
	for _, f := range w.fns {
		fs = append(fs, f)
	}
	w.mu.Unlock()
	for _, id := range ids {
		for _, f := range fs {
			f(id)
		}
	}
}

// Close drops every callback; later Adds and Notifies do nothing.
func (w *Watchers) Close() {
	w.mu.Lock()
	w.closed = true
	clear(w.fns)
	w.mu.Unlock()
}

// Len is how many callbacks are registered.
func (w *Watchers) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.fns)
}

package reaper

import (
	"context"
	"slices"
	"sync"
)

// MaxWatchPending bounds the app ids that wait for one watcher's callback. Past it,
// Notify drops ids for that watcher: a callback stuck that long must not make
// memory grow with every app it is told about (a Valkey store is told about ids
// that any client of the server may publish), and nothing is lost for good, since
// nodes also poll the store (see RecordWatcher).
const MaxWatchPending = 10_000

// Watchers is the notifying half of a RecordWatcher, shared by the stores: the
// callbacks registered by Watch, each fed by its own goroutine from a set of
// pending app ids. The zero value is ready to use; a Watchers must not be copied
// after first use.
//
// Notify never waits for a callback: ids wait in the watcher's set, so a burst of
// changes to one app while its callback runs makes one call, not one per change
// (callers re-read the record anyway).
type Watchers struct {
	mu       sync.Mutex
	watchers []*watcher    // copy-on-write: Notify reads it under mu, works outside
	stop     chan struct{} // closed by Close; made by the first Add
	closed   bool
	running  sync.WaitGroup // the delivery goroutines
}

// watcher is one Add: the ids waiting for its callback.
type watcher struct {
	mu      sync.Mutex
	pending map[string]struct{}
	signal  chan struct{} // capacity 1: "pending is not empty"
}

// Add registers changed and returns at once. From then on, changed is called,
// from one goroutine of its own and never twice at once, with each app id passed
// to Notify, until ctx ends or Close is called; the watcher is then removed. Add
// does nothing when ctx has already ended or after Close.
func (ws *Watchers) Add(ctx context.Context, changed func(appID string)) {
	if ctx.Err() != nil {
		return
	}
	w := &watcher{pending: map[string]struct{}{}, signal: make(chan struct{}, 1)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	// Checked under mu, which Close takes: no goroutine starts once Close waits.
	if ws.closed {
		return
	}
	if ws.stop == nil {
		ws.stop = make(chan struct{})
	}
	ws.watchers = append(slices.Clip(ws.watchers), w)
	ws.running.Add(1)
	go ws.deliver(ctx, ws.stop, w, changed)
}

// Notify queues appID for every watcher (up to MaxWatchPending ids each) and
// returns without waiting for any callback. Safe to call at any time, also after
// Close (it then tells nobody).
func (ws *Watchers) Notify(appID string) {
	ws.mu.Lock()
	watchers := ws.watchers
	ws.mu.Unlock()
	for _, w := range watchers {
		w.mu.Lock()
		if len(w.pending) < MaxWatchPending {
			w.pending[appID] = struct{}{}
		}
		w.mu.Unlock()
		select {
		case w.signal <- struct{}{}:
		default: // already signalled
		}
	}
}

// Close stops every watcher and waits for the callbacks that are running to
// return; later Adds do nothing. It must not be called from a callback (it would
// wait for itself). Idempotent.
func (ws *Watchers) Close() {
	ws.mu.Lock()
	if !ws.closed {
		ws.closed = true
		if ws.stop != nil {
			close(ws.stop)
		}
	}
	ws.mu.Unlock()
	ws.running.Wait()
}

// Len returns how many watchers are registered. It does not wait.
func (ws *Watchers) Len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.watchers)
}

// deliver calls changed with w's pending ids until ctx ends or stop is closed.
func (ws *Watchers) deliver(ctx context.Context, stop <-chan struct{}, w *watcher, changed func(string)) {
	defer ws.running.Done()
	defer ws.remove(w)
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-w.signal:
		}
		w.mu.Lock()
		batch := w.pending
		w.pending = make(map[string]struct{}, len(batch))
		w.mu.Unlock()
		for app := range batch {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			default:
			}
			changed(app)
		}
	}
}

func (ws *Watchers) remove(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	// A new slice, since Notify may be iterating over the old one.
	ws.watchers = slices.DeleteFunc(slices.Clone(ws.watchers), func(x *watcher) bool { return x == w })
}

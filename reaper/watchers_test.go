package reaper_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/reapergw/reaper/reaper"
)

// calls records a watcher's callbacks; block, when set, holds the callback for that
// app until release is closed.
type calls struct {
	mu      sync.Mutex
	seen    map[string]int
	block   string
	release chan struct{}
}

func newCalls(block string) *calls {
	return &calls{seen: map[string]int{}, block: block, release: make(chan struct{})}
}

func (c *calls) changed(app string) {
	c.mu.Lock()
	c.seen[app]++
	c.mu.Unlock()
	if app == c.block {
		<-c.release
	}
}

// stuck adds a watcher to ws and leaves it in its callback for "block" until its
// release is closed. The watchers added before are told about "block" too.
func stuck(t *testing.T, ws *reaper.Watchers) *calls {
	t.Helper()
	c := newCalls("block")
	ws.Add(t.Context(), c.changed)
	ws.Notify("block")
	synctest.Wait()
	return c
}

func (c *calls) count(app string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[app]
}

func (c *calls) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.seen {
		n += k
	}
	return n
}

// A callback that blocks holds up neither Notify nor the other watchers; what
// was notified meanwhile reaches it once it returns, one call per app.
func TestWatchers_SlowCallbackBlocksNobodyAndCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ws reaper.Watchers
		fast := newCalls("")
		ws.Add(t.Context(), fast.changed)
		slow := stuck(t, &ws)

		for range 1000 {
			ws.Notify("a") // returns although slow is stuck
		}
		ws.Notify("b")
		synctest.Wait()
		if fast.count("block") != 1 || fast.count("a") < 1 || fast.count("b") != 1 {
			t.Fatalf("the fast watcher saw %v while the slow one was stuck; want block, a and b", fast.seen)
		}
		if slow.total() != 1 {
			t.Fatalf("the stuck watcher saw %v; want only its first call", slow.seen)
		}

		close(slow.release)
		synctest.Wait()
		if slow.count("a") != 1 || slow.count("b") != 1 {
			t.Fatalf("the released watcher saw %v; want the 1000 a as one call, and b once", slow.seen)
		}
	})
}

// A callback stuck for long keeps at most MaxWatchPending ids waiting; the rest
// are dropped (polling finds them), and nothing blocks.
func TestWatchers_PendingIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ws reaper.Watchers
		slow := stuck(t, &ws)

		for i := range reaper.MaxWatchPending + 100 {
			ws.Notify(fmt.Sprint("app-", i))
		}
		close(slow.release)
		synctest.Wait()
		if got := slow.total() - 1; got != reaper.MaxWatchPending {
			t.Fatalf("after %d distinct ids, the watcher got %d calls; want %d", reaper.MaxWatchPending+100, got, reaper.MaxWatchPending)
		}
		// Room again: the next id is delivered.
		ws.Notify("after")
		synctest.Wait()
		if slow.count("after") != 1 {
			t.Fatal("an id notified once the set had drained was not delivered")
		}
	})
}

func TestWatchers_StopsWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ws reaper.Watchers
		ctx, cancel := context.WithCancel(t.Context())
		c := newCalls("")
		ws.Add(ctx, c.changed)
		if ws.Len() != 1 {
			t.Fatalf("Len after Add = %d, want 1", ws.Len())
		}
		ws.Notify("a")
		synctest.Wait()
		cancel()
		synctest.Wait() // the delivery goroutine has ended (else the bubble would not settle)
		if ws.Len() != 0 {
			t.Fatalf("Len once the context ended = %d, want 0", ws.Len())
		}
		ws.Notify("b")
		synctest.Wait()
		if c.count("a") != 1 || c.total() != 1 {
			t.Fatalf("calls = %v, want a once and nothing after the context ended", c.seen)
		}

		// A context that has already ended registers nothing.
		ws.Add(ctx, c.changed)
		if ws.Len() != 0 {
			t.Fatalf("Len after an Add with an ended context = %d, want 0", ws.Len())
		}
	})
}

// Close waits for a running callback, stops every watcher, and makes later Adds
// and Notifies do nothing.
func TestWatchers_CloseWaitsForRunningCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ws reaper.Watchers
		idle := newCalls("")
		ws.Add(t.Context(), idle.changed)
		slow := stuck(t, &ws)

		closed := make(chan struct{})
		go func() {
			ws.Close()
			close(closed)
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a callback was running")
		default:
		}
		close(slow.release)
		<-closed
		if ws.Len() != 0 {
			t.Fatalf("Len after Close = %d, want 0", ws.Len())
		}

		late := newCalls("")
		ws.Add(t.Context(), late.changed)
		ws.Notify("after")
		ws.Close() // idempotent
		synctest.Wait()
		if ws.Len() != 0 || late.total() != 0 || idle.count("after") != 0 {
			t.Fatalf("after Close: Len %d, late watcher %v, idle watcher %v; want nothing", ws.Len(), late.seen, idle.seen)
		}
	})
}

func TestWatchers_NotifyWithoutWatchers(t *testing.T) {
	var ws reaper.Watchers
	ws.Notify("a") // neither blocks nor panics
	ws.Close()
	ws.Notify("a")
}

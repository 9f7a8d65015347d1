package valkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/reaper"
)

// collect returns a channel fed by a Watch on s until ctx ends.
func collect(ctx context.Context, s *Store) <-chan string {
	got := make(chan string, 256)
	s.Watch(ctx, func(app string) {
		select {
		case got <- app:
		default:
		}
	})
	return got
}

// expectApp waits up to 10 s for app on got, skipping others.
func expectApp(t *testing.T, got <-chan string, app string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case a := <-got:
			if a == app {
				return
			}
		case <-deadline:
			t.Fatalf("no notification of %s within 10s", app)
		}
	}
}

func TestWatch_AcrossNodes(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	n1, n2 := twoNodes(t, srv, Options{})
	got := collect(t.Context(), n2)
	waitWatched(t, n1, got, "warmup") // n2's subscription is live

	put := time.Now()
	if err := n1.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: reaper.StatusUp}); err != nil {
		t.Fatal(err)
	}
	expectApp(t, got, "a")
	t.Logf("PutRecord on one node reached the other's watch in %v", time.Since(put))

	if err := n1.DeleteRecord(t.Context(), "a", 0); err != nil {
		t.Fatal(err)
	}
	expectApp(t, got, "a")

	// A refused write is not announced.
	if err := n1.PutRecord(t.Context(), reaper.Record{AppID: "b", Term: 3}); err != nil {
		t.Fatal(err)
	}
	expectApp(t, got, "b")
	if err := n1.PutRecord(t.Context(), reaper.Record{AppID: "b", Term: 2}); err == nil {
		t.Fatal("a stale PutRecord succeeded")
	}
	if err := n1.PutRecord(t.Context(), reaper.Record{AppID: "c"}); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-got:
		if a != "c" {
			t.Fatalf("after a refused write of b, the next notification is %q, want c", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification of c")
	}
}

// A callback that blocks holds up neither PutRecord nor the other watchers, and
// changes made meanwhile are delivered once it returns, one call per app.
func TestWatch_SlowCallbackBlocksNothing(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	n1, n2 := twoNodes(t, srv, Options{})
	release := make(chan struct{})
	slow := make(chan string, 256)
	n2.Watch(t.Context(), func(app string) {
		slow <- app
		if app == "block" {
			<-release
		}
	})
	fast := collect(t.Context(), n2)
	waitWatched(t, n1, fast, "block") // the slow callback now blocks on "block"
	expectApp(t, slow, "block")

	for range 50 {
		if err := n1.PutRecord(t.Context(), reaper.Record{AppID: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n1.PutRecord(t.Context(), reaper.Record{AppID: "end"}); err != nil {
		t.Fatal(err)
	}
	// Messages come in order on one subscription, and each is queued for every
	// watcher at once: when the fast watcher has seen "end", the slow one has every
	// x queued.
	expectApp(t, fast, "end")
	close(release)
	seen := map[string]int{}
	deadline := time.After(10 * time.Second)
	for seen["x"] == 0 || seen["end"] == 0 {
		select {
		case a := <-slow:
			seen[a]++
		case <-deadline:
			t.Fatalf("the slow watcher got %v after it was released, want x and end", seen)
		}
	}
	if seen["x"] != 1 || len(slow) != 0 {
		t.Errorf("the slow watcher got x %d times, and %d more calls; want the 50 puts as one call", seen["x"], len(slow))
	}
}

func TestWatch_StopsWithContextAndClose(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	n1, n2 := twoNodes(t, srv, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	calls := make(chan string, 256)
	n2.Watch(ctx, func(app string) { calls <- app })
	waitWatched(t, n1, calls, "a")
	cancel()
	// The watch goroutine leaves once ctx ended: the watcher list empties.
	waitFor(t, "the watcher is removed", func() bool {
		return n2.watch.watchers.Len() == 0
	})
	for len(calls) > 0 {
		<-calls
	}
	if err := n1.PutRecord(t.Context(), reaper.Record{AppID: "after"}); err != nil {
		t.Fatal(err)
	}
	// A second, live watcher sees the put; the cancelled one must not.
	live := collect(t.Context(), n2)
	waitWatched(t, n1, live, "after")
	if len(calls) != 0 {
		t.Errorf("a watch whose context ended was called with %q", <-calls)
	}

	done := make(chan struct{})
	go func() {
		n2.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a watch running")
	}
	n2.Watch(t.Context(), func(string) { t.Error("a watch on a closed store was called") })
	if _, _, err := n2.Record(t.Context(), "a"); err == nil {
		t.Error("Record on a closed store succeeded")
	}
}

package paastest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

// reports counts what a Watch callback heard of one app, and kicks whoever
// follows it.
type reports struct {
	app  string
	mu   sync.Mutex
	n    int
	kick chan struct{}
}

func newReports(app paas.App) *reports {
	return &reports{app: app.ID, kick: make(chan struct{}, 1)}
}

// changed is the callback: it never blocks.
func (r *reports) changed(id string) {
	if id != r.app {
		return
	}
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *reports) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// follow waits, woken by the reports alone, until the app is observed in want.
// Drivers change what Observe says before they report it, so a change that
// is never reported leaves follow waiting: it fails after waitFor.
func follow(t *testing.T, h Harness, r *reports, app paas.App, want paas.State, via ...paas.State) {
	t.Helper()
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	var seen []paas.State
	for {
		obs := observe(t, h, app)
		if len(seen) == 0 || seen[len(seen)-1] != obs.State {
			seen = append(seen, obs.State)
		}
		if obs.State == want {
			return
		}
		if !slices.Contains(via, obs.State) {
			t.Fatalf("%s: observed %s on the way to %s (states seen: %v)", app, describe(obs), want, seen)
		}
		select {
		case <-r.kick:
		case <-deadline.C:
			t.Fatalf("%s: still %s after %v, and Watch reported no change since (states seen: %v): a caller waiting on Watch would wait for ever",
				app, describe(obs), waitFor, seen)
		}
	}
}

// watcher returns the client as a paas.Watcher, or skips the subtest.
func watcher(t *testing.T, h Harness) paas.Watcher {
	t.Helper()
	w, ok := h.Client.(paas.Watcher)
	skipUnless(t, ok, "the client is not a paas.Watcher")
	skipUnless(t, !h.Unwatched, "the harness says Watch does not report these apps (Unwatched)")
	return w
}

// watch registers r until ctx ends; Watch must return at once.
func (r *reports) watch(ctx context.Context, t *testing.T, w paas.Watcher) {
	t.Helper()
	withTimeout(t, prompt, "Watch", func() { w.Watch(ctx, r.changed) })
}

func testWatchReports(t *testing.T, h Harness) {
	w := watcher(t, h)
	app := h.Apps[0]
	r := newReports(app)
	r.watch(t.Context(), t, w)

	start(t, h, app)
	follow(t, h, r, app, paas.StateShouldBeUp, upVia(h)...)
	testwait.For(t, waitFor, "Watch to report the app after its start", func() bool { return r.count() > 0 })
	checkServes(t, h, app)

	n := r.count()
	stop(t, h, app)
	follow(t, h, r, app, paas.StateShouldBeDown, downVia(h)...)
	testwait.For(t, waitFor, "Watch to report the app after its stop", func() bool { return r.count() > n })
}

func testWatchStops(t *testing.T, h Harness) {
	w := watcher(t, h)
	app := h.Apps[0]
	ended, kept := newReports(app), newReports(app)
	ctx, cancel := context.WithCancel(t.Context())
	ended.watch(ctx, t, w)
	kept.watch(t.Context(), t, w)

	start(t, h, app)
	follow(t, h, kept, app, paas.StateShouldBeUp, upVia(h)...)
	testwait.For(t, waitFor, "both callbacks to hear the start", func() bool { return ended.count() > 0 && kept.count() > 0 })
	cancel()

	// The driver may be calling it as its context ends; from then on, each change
	// reaches the kept callback alone. Two changes in a row must pass without a
	// call to the ended one.
	deadline := time.Now().Add(waitFor)
	want, quiet := paas.StateShouldBeDown, 0
	for quiet < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the callback of a Watch whose context ended was still called at each change after %v (%d calls)",
				app, waitFor, ended.count())
		}
		before, heard := ended.count(), kept.count()
		if want == paas.StateShouldBeDown {
			stop(t, h, app)
			follow(t, h, kept, app, want, downVia(h)...)
			want = paas.StateShouldBeUp
		} else {
			start(t, h, app)
			follow(t, h, kept, app, want, upVia(h)...)
			want = paas.StateShouldBeDown
		}
		testwait.For(t, waitFor, "Watch to report the change", func() bool { return kept.count() > heard })
		if ended.count() == before {
			quiet++
		} else {
			quiet = 0
		}
	}
}

func testObserveAll(t *testing.T, h Harness) {
	b, ok := h.Client.(paas.BatchObserver)
	skipUnless(t, ok, "the client is not a paas.BatchObserver")
	up, down := h.Apps[0], h.Apps[1]
	startUp(t, h, up)

	got, err := b.ObserveAll(t.Context(), []paas.App{up, down, h.Unknown})
	if err != nil {
		t.Fatalf("ObserveAll: %v", err)
	}
	if obs, has := got[h.Unknown]; has {
		t.Errorf("ObserveAll gave the unknown app %s: %s, want it absent (not found)", h.Unknown, describe(obs))
	}
	if len(got) != 2 {
		t.Errorf("ObserveAll gave %d apps, want 2: %v", len(got), got)
	}
	for _, app := range []paas.App{up, down} {
		batch, ok := got[app]
		if !ok {
			t.Errorf("ObserveAll left out %s", app)
			continue
		}
		one := observe(t, h, app)
		if batch.State != one.State || batch.Name != one.Name || batch.NotShutdownable != one.NotShutdownable {
			t.Errorf("%s: ObserveAll says %s (name %q, not shutdownable %v), Observe %s (name %q, not shutdownable %v)",
				app, batch.State, batch.Name, batch.NotShutdownable, one.State, one.Name, one.NotShutdownable)
		}
	}
	if got, err := b.ObserveAll(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("ObserveAll of no app: %v, %v; want nothing", got, err)
	}
}

package reaper

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// wakeGroup wakes the group of groupEnv through web and waits until every
// member is up.
func wakeGroup(t *testing.T, e *env) {
	t.Helper()
	e.engine.asks.askNow(e.engine.app("web"), time.Now())
	settle()
	time.Sleep(6 * time.Second)
	settle()
	for _, id := range []string{"web", "api", "worker"} {
		if r, _ := e.engine.Record(id); r.Status != StatusUp {
			t.Fatalf("%s: %s after its group's wake, want Up", id, r.Status)
		}
	}
}

// idleFor lets simulated time pass, a fast tick at a time.
func idleFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(5 * time.Second)
		settle()
	}
}

// A member that cannot be stopped (worker: first in the stop order worker,
// web, api) keeps the members after it in the stop order up: they stop only
// once it is down. A stop refused for now (retried at each look) or for good
// (the platform says not shutdownable) leaves it Up; a stop that fails
// otherwise puts it in Error, where it counts for nothing, and the others go
// to sleep.
func TestJob_GroupMemberThatCannotStop(t *testing.T) {
	cases := []struct {
		name       string
		break_     func(fake *paastest.Fake)
		worker     Status
		othersStop bool
	}{
		{"its stop keeps failing", func(fake *paastest.Fake) {
			for range 1000 { // more than the test's half hour sends
				fake.FailNext("stop", paas.ErrUnavailable)
			}
		}, StatusUp, false},
		{"not shutdownable", func(fake *paastest.Fake) {
			fake.Set("worker", paastest.App{State: paas.StateShouldBeUp, NotShutdownable: true})
		}, StatusUp, false},
		{"its stop fails for good", func(fake *paastest.Fake) {
			fake.FailNext("stop", errors.New("fake: the platform lost the app"))
		}, StatusError, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, fake := groupEnv(t)
				e.start()
				defer e.stop()
				settle()
				wakeGroup(t, e)
				c.break_(fake)
				idleFor(30 * time.Minute) // 3 × the group's grace period
				calls := startsAndStops(fake)
				// A refused stop is sent again at the next pass (every 30 s),
				// not at once without end.
				if n := countOf(calls, "stop worker"); c.name == "its stop keeps failing" && (n < 2 || n > 100) {
					t.Errorf("worker's stop sent %d times in 30 min, want again at each pass", n)
				}
				if r, _ := e.engine.Record("worker"); r.Status != c.worker {
					t.Errorf("worker: %s (%s), want %s", r.Status, r.Cause, c.worker)
				}
				for _, id := range []string{"web", "api"} {
					stopped := countOf(calls, "stop "+id) > 0
					r, _ := e.engine.Record(id)
					switch {
					case stopped != c.othersStop:
						t.Errorf("%s stopped: %v, want %v (%v)", id, stopped, c.othersStop, calls)
					case !c.othersStop && r.Status != StatusUp:
						t.Errorf("%s: %s, want Up while worker is", id, r.Status)
					}
				}
				if c.othersStop && !slices.Equal(calls[len(calls)-2:], []string{"stop web", "stop api"}) {
					t.Errorf("calls %v, want web then api stopped last", calls)
				}
			})
		})
	}
}

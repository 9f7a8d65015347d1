package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

func mustTouch(t *testing.T, s reaper.Store, access map[string]time.Time) {
	t.Helper()
	if err := s.TouchAccess(t.Context(), access); err != nil {
		t.Fatalf("TouchAccess(%v): %v", access, err)
	}
}

func checkAccess(t *testing.T, s reaper.Store, want map[string]time.Time) {
	t.Helper()
	got, err := s.LastAccess(t.Context())
	if err != nil {
		t.Fatalf("LastAccess: %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("LastAccess = %v, want %v", got, want)
	}
	for app, w := range want {
		if g, ok := got[app]; !ok || !g.Equal(w) {
			t.Errorf("LastAccess[%s] = %v (present %v), want %v", app, g, ok, w)
		}
	}
}

func testTouchAccessMax(t *testing.T, s reaper.Store) {
	checkAccess(t, s, map[string]time.Time{})
	mustTouch(t, s, map[string]time.Time{"a": base.Add(2 * time.Minute), "b": base})
	checkAccess(t, s, map[string]time.Time{"a": base.Add(2 * time.Minute), "b": base})

	// An older time never moves a clock back, and apps not named are left alone.
	mustTouch(t, s, map[string]time.Time{"a": base.Add(time.Minute)})
	checkAccess(t, s, map[string]time.Time{"a": base.Add(2 * time.Minute), "b": base})

	mustTouch(t, s, map[string]time.Time{"a": base.Add(3 * time.Minute), "b": base.Add(-time.Hour), "c": base})
	checkAccess(t, s, map[string]time.Time{"a": base.Add(3 * time.Minute), "b": base, "c": base})

	mustTouch(t, s, map[string]time.Time{})
	checkAccess(t, s, map[string]time.Time{"a": base.Add(3 * time.Minute), "b": base, "c": base})
}

func testTouchAccessConcurrent(t *testing.T, s reaper.Store) {
	const workers, touches = 20, 25
	apps := []string{"a", "b", "c"}
	// Every time is drawn up front, so the expected maximum is known.
	r := rand.New(rand.NewPCG(1, 2))
	plan := make([][]map[string]time.Time, workers)
	want := map[string]time.Time{}
	for w := range plan {
		for range touches {
			m := map[string]time.Time{}
			for _, app := range apps {
				if r.IntN(2) == 0 {
					at := base.Add(time.Duration(r.IntN(10_000_000)) * time.Millisecond)
					m[app] = at
					if at.After(want[app]) {
						want[app] = at
					}
				}
			}
			plan[w] = append(plan[w], m)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range plan {
		wg.Go(func() {
			<-start
			for _, m := range plan[w] {
				if err := s.TouchAccess(t.Context(), m); err != nil {
					t.Errorf("TouchAccess: %v", err)
					return
				}
			}
		})
	}
	close(start)
	withTimeout(t, "concurrent TouchAccess", wg.Wait)
	checkAccess(t, s, want)
}

func mustSetInFlight(t *testing.T, s reaper.Store, node string, counts map[string]int, ttl time.Duration) {
	t.Helper()
	if err := s.SetInFlight(t.Context(), node, counts, ttl); err != nil {
		t.Fatalf("SetInFlight(%s, %v): %v", node, counts, err)
	}
}

// inFlightIs reports whether InFlight gives want; an app absent from want must
// have no count (absent or 0).
func inFlightIs(t *testing.T, s reaper.Store, want map[string]int) (bool, string) {
	t.Helper()
	got, err := s.InFlight(t.Context())
	if err != nil {
		t.Fatalf("InFlight: %v", err)
	}
	for app, n := range got {
		if n != want[app] {
			return false, fmt.Sprintf("InFlight = %v, want %v", got, want)
		}
	}
	for app, n := range want {
		if got[app] != n {
			return false, fmt.Sprintf("InFlight = %v, want %v", got, want)
		}
	}
	return true, ""
}

func checkInFlight(t *testing.T, s reaper.Store, want map[string]int) {
	t.Helper()
	if ok, why := inFlightIs(t, s, want); !ok {
		t.Error(why)
	}
}

func testInFlightSums(t *testing.T, s reaper.Store) {
	checkInFlight(t, s, map[string]int{})
	mustSetInFlight(t, s, "node-1", map[string]int{"a": 2, "b": 1}, time.Minute)
	checkInFlight(t, s, map[string]int{"a": 2, "b": 1})
	mustSetInFlight(t, s, "node-2", map[string]int{"a": 3, "c": 4}, time.Minute)
	checkInFlight(t, s, map[string]int{"a": 5, "b": 1, "c": 4})
}

func testInFlightReplaces(t *testing.T, s reaper.Store) {
	mustSetInFlight(t, s, "node-1", map[string]int{"a": 2, "b": 1}, time.Minute)
	mustSetInFlight(t, s, "node-2", map[string]int{"a": 3}, time.Minute)
	// node-1's new counts replace its old ones: "a" is no longer open there.
	mustSetInFlight(t, s, "node-1", map[string]int{"b": 4}, time.Minute)
	checkInFlight(t, s, map[string]int{"a": 3, "b": 4})
	mustSetInFlight(t, s, "node-1", map[string]int{}, time.Minute)
	checkInFlight(t, s, map[string]int{"a": 3})
	mustSetInFlight(t, s, "node-2", nil, time.Minute)
	checkInFlight(t, s, map[string]int{})
}

func testInFlightExpires(t *testing.T, s reaper.Store) {
	mustSetInFlight(t, s, "node-live", map[string]int{"a": 3}, time.Minute)
	set := time.Now()
	mustSetInFlight(t, s, "node-dying", map[string]int{"a": 4, "c": 7}, shortTTL)
	got, err := s.InFlight(t.Context())
	if err != nil {
		t.Fatalf("InFlight: %v", err)
	}
	// Only meaningful while the TTL has not run out (a slow machine may be past it).
	if time.Since(set) < shortTTL && (got["a"] != 7 || got["c"] != 7) {
		t.Errorf("InFlight before expiry = %v, want a:7 c:7", got)
	}
	// The dying node's counts go; the live node's stay.
	eventually(t, "in-flight counts of a node expire", func() (bool, string) {
		return inFlightIs(t, s, map[string]int{"a": 3})
	})
}

package reaper

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

func TestReleaseWindow(t *testing.T) {
	var w releaseWindow
	took := 0
	for w.take() {
		took++
	}
	if took != releaseWindowStart {
		t.Fatalf("a fresh window lets %d go, want %d", took, releaseWindowStart)
	}
	// Slow start: each good answer makes room for two more.
	w.ended(true)
	first, second, third := w.take(), w.take(), w.take()
	if !first || !second || third {
		t.Fatalf("after a good answer: size %d, in flight %d; want room for exactly two more", w.size, w.inFlight)
	}
	if w.size != releaseWindowStart+1 {
		t.Fatalf("size %d after one good answer, want %d", w.size, releaseWindowStart+1)
	}
	// A bad answer halves it (never below the start), and growth turns linear.
	for range 8 {
		w.ended(true)
	}
	before := w.size
	w.ended(false)
	if w.size != max(before/2, releaseWindowStart) || w.threshold != w.size {
		t.Fatalf("after a bad answer: size %d threshold %d, want both %d", w.size, w.threshold, max(before/2, releaseWindowStart))
	}
	size := w.size
	for range size - 1 {
		w.inFlight++ // as take would
		w.ended(true)
	}
	if w.size != size {
		t.Fatalf("size %d after %d good answers past the threshold, want still %d", w.size, size-1, size)
	}
	w.inFlight++
	w.ended(true)
	if w.size != size+1 {
		t.Fatalf("size %d after a window of good answers, want %d", w.size, size+1)
	}
	// Never past the maximum.
	m := releaseWindow{size: releaseWindowMax, threshold: releaseWindowMax, inFlight: 1}
	m.ended(true)
	if m.size != releaseWindowMax {
		t.Fatalf("size %d, want at most %d", m.size, releaseWindowMax)
	}
	// Done starts afresh; the places of requests released before are ignored.
	w.done()
	w.ended(true)
	if w != (releaseWindow{}) {
		t.Fatalf("a place given back after done changed the fresh window: %+v", w)
	}
	if !w.take() || w.size != releaseWindowStart {
		t.Fatalf("after done: size %d, want a fresh window of %d", w.size, releaseWindowStart)
	}
}

// A crowd held for a sleeping app is released releaseWindowStart at a time at
// first, the oldest first, more as the app answers; a request that comes while
// others still wait for their release waits with them. Every request gets the
// app's answer.
func TestHold_ACrowdIsReleasedOldestFirstAtTheAppsPace(t *testing.T) {
	for _, parking := range []bool{false, true} {
		t.Run(fmt.Sprintf("parking=%v", parking), func(t *testing.T) {
			const n = 40
			var (
				mu       sync.Mutex
				order    []string
				inApp    atomic.Int64
				peak     atomic.Int64
				gate     = make(chan struct{})
				released = make(chan struct{})
			)
			app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				order = append(order, r.URL.Path)
				mu.Unlock()
				if cur := inApp.Add(1); cur > peak.Load() {
					peak.Store(cur)
				}
				<-gate
				inApp.Add(-1)
				io.WriteString(w, "ok "+r.URL.Path)
			}))
			t.Cleanup(app.Close)
			t.Cleanup(func() {
				select {
				case <-released:
				default:
					close(gate)
				}
			})
			rig := &holdRig{}
			rig.start(t, parking, "{app_id: app, ready_delay: 0, max_held: 100}", app.URL)
			rig.engine.holds.crowdedAbove = 10
			var closed atomic.Int64 // answers that closed their connection

			answers := make(chan string, n+1)
			get := func(path string) {
				res, err := http.Get(rig.front.URL + path)
				if err != nil {
					answers <- err.Error()
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.Close {
					closed.Add(1)
				}
				answers <- fmt.Sprintf("%d %s", res.StatusCode, b)
			}
			for i := range n { // one at a time, so that their order is known
				go get(fmt.Sprintf("/r%02d", i))
				testwait.For(t, 5*time.Second, fmt.Sprintf("request %d held", i), func() bool { return rig.app.held.Load() == int64(i+1) })
			}
			testwait.For(t, 5*time.Second, "a start asked", func() bool { return rig.fake.Count("start", "app") == 1 })
			rig.fake.FinishStart("app")
			testwait.For(t, 5*time.Second, "the first released requests at the app", func() bool { return inApp.Load() == releaseWindowStart })
			// One more, while the others wait: it goes behind them.
			go get("/late")
			testwait.For(t, 5*time.Second, "the late request held", func() bool { return rig.app.held.Load() == n-releaseWindowStart+1 })
			if got := inApp.Load(); got != releaseWindowStart {
				t.Fatalf("%d requests at the app before any answer, want %d (the window)", got, releaseWindowStart)
			}
			close(gate)
			close(released)
			var bad []string
			for range n + 1 {
				if a := <-answers; !strings.HasPrefix(a, "200 ok /") {
					bad = append(bad, a)
				}
			}
			if len(bad) > 0 {
				t.Fatalf("answers that are not the app's: %q", bad)
			}
			// Released while the node held more than 10: their connections close
			// after the answer; the last ones keep theirs.
			if c := closed.Load(); c < releaseWindowStart || c > n+1-10 {
				t.Errorf("%d answers closed their connection, want those released from the crowd only (between %d and %d)", c, releaseWindowStart, n+1-10)
			}
			mu.Lock()
			defer mu.Unlock()
			// Released in rounds, oldest first (within a round, the order they
			// reach the app in is the scheduler's): the first round is the
			// oldest releaseWindowStart, and the late one comes last.
			first := slices.Clone(order[:releaseWindowStart])
			slices.Sort(first)
			var want []string
			for i := range releaseWindowStart {
				want = append(want, fmt.Sprintf("/r%02d", i))
			}
			if !slices.Equal(first, want) || len(order) != n+1 {
				t.Errorf("the app got them in the order %v, want the %d oldest first", order, releaseWindowStart)
			}
			if rig.app.held.Load() != 0 || rig.gw.Parked() != 0 {
				t.Errorf("held %d, parked %d after every answer", rig.app.held.Load(), rig.gw.Parked())
			}
		})
	}
}

// The waiter loop releases held requests in the order they came, through the
// window: the oldest releaseWindowStart first, the next ones as those end, and
// one that came once the app was up, while others still waited, after them.
func TestHolds_ReleaseOldestFirstThroughTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, err := NewMemStore(MemStoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e := NewEngine(EngineOptions{Node: "n1", Store: store})
		cfg := DefaultConfig()
		cfg.AppID = "app"
		e.Register("r", "r", &cfg, nil)
		a := e.app("app")
		e.Apply(Record{AppID: "app", Status: StatusDown, Revision: 1})

		var mu sync.Mutex
		var order []int
		hold := func(i int) {
			h, res, _ := e.holds.start(a, 100, 0, time.Hour, time.Now().Add(time.Hour), func(res holdResult, _ *Record) {
				if res != holdReleased {
					t.Errorf("request %d: %v, want released", i, res)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			if h == nil {
				t.Fatalf("request %d: settled at once (%v), want held", i, res)
			}
		}
		released := func() []int {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(order)
		}
		for i := range 20 {
			hold(i)
		}
		e.Apply(Record{AppID: "app", Status: StatusUp, Revision: 2})
		if got := released(); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
			t.Fatalf("released first %v, want the %d oldest", got, releaseWindowStart)
		}
		hold(20) // the app is up, but others still wait: it waits behind them
		for range releaseWindowStart {
			e.holds.releaseEnded(a, true)
		}
		want := make([]int, 21)
		for i := range want {
			want[i] = i
		}
		if got := released(); !slices.Equal(got, want) {
			t.Fatalf("released %v, want every one in the order they came", got)
		}
		for range 13 {
			e.holds.releaseEnded(a, true)
		}
		e.Shutdown()
		synctest.Wait()
	})
}

// While a crowd is held the garbage collector's target is lowered, and the one
// found is put back once fewer than half a crowd are held.
func TestCrowdGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	current := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	var g crowdGC
	steps := []struct {
		held int64
		want int
	}{
		{10, 100}, {1000, 100}, {1001, crowdGCPercent}, {5000, crowdGCPercent},
		{600, crowdGCPercent}, {500, crowdGCPercent}, {499, 100}, {1001, crowdGCPercent}, {0, 100},
	}
	for _, s := range steps {
		g.note(s.held, 1000)
		if got := current(); got != s.want {
			t.Fatalf("held %d: GC target %d, want %d", s.held, got, s.want)
		}
	}
}

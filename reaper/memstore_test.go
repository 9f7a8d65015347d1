package reaper_test

import (
	"context"
	"github.com/reapergw/reaper/internal/logtest"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/reaper/storetest"
)

func TestMemStore_Contract(t *testing.T) {
	t.Run("MemoryOnly", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) reaper.Store {
			return newMemStore(t, reaper.MemStoreOptions{})
		})
	})
	// The same contract with a state file, so saves run beside every method
	// (under -race this checks that snapshots and writes never race the maps).
	t.Run("WithStateFile", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) reaper.Store {
			return newMemStore(t, reaper.MemStoreOptions{Path: filepath.Join(t.TempDir(), "state.json")})
		})
	})
}

// newMemStore returns a store closed at the end of the test.
func newMemStore(t *testing.T, opts reaper.MemStoreOptions) *reaper.MemStore {
	t.Helper()
	s, err := reaper.NewMemStore(opts)
	if err != nil {
		t.Fatalf("NewMemStore: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newLogger() (*slog.Logger, *logtest.Buffer) {
	b := &logtest.Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

func TestMemStore_WatchSlowCallbackDoesNotStallPut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t, reaper.MemStoreOptions{})
		release := make(chan struct{})
		var mu sync.Mutex
		var seen []string
		s.Watch(t.Context(), func(app string) {
			<-release // a callback stuck on something slow
			mu.Lock()
			seen = append(seen, app)
			mu.Unlock()
		})

		// 1000 puts return although the callback is blocked.
		for i := range 1000 {
			st := reaper.StatusUp
			if i%2 == 1 {
				st = reaper.StatusDown
			}
			if err := s.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: st}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutRecord(t.Context(), reaper.Record{AppID: "b", Status: reaper.StatusUp}); err != nil {
			t.Fatal(err)
		}
		close(release)
		synctest.Wait()

		// Nothing was dropped, and the burst was coalesced: "a" was seen by the
		// first call (or two) and b once; never 1000 calls.
		mu.Lock()
		defer mu.Unlock()
		count := map[string]int{}
		for _, app := range seen {
			count[app]++
		}
		if count["a"] < 1 || count["a"] > 2 || count["b"] != 1 {
			t.Fatalf("callbacks = %v, want a once or twice and b once", count)
		}
	})
}

func TestMemStore_WatchStopsWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t, reaper.MemStoreOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		var seen []string
		s.Watch(ctx, func(app string) {
			mu.Lock()
			seen = append(seen, app)
			mu.Unlock()
		})
		mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp, Term: 2})
		synctest.Wait()
		if err := s.DeleteRecord(t.Context(), "a", 2); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		// A refused write changes nothing, so it tells nobody.
		mustPut(t, s, reaper.Record{AppID: "c", Term: 5})
		synctest.Wait()
		if err := s.PutRecord(t.Context(), reaper.Record{AppID: "c", Term: 4}); err == nil {
			t.Fatal("stale PutRecord accepted")
		}
		synctest.Wait()
		cancel()
		synctest.Wait() // the watcher goroutine has ended (else the bubble would not settle)
		mustPut(t, s, reaper.Record{AppID: "b", Status: reaper.StatusUp})
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(seen, ","); got != "a,a,c" {
			t.Fatalf("callbacks = %s, want a,a,c (put, delete, put; nothing after ctx ended)", got)
		}
	})
}

func mustPut(t *testing.T, s reaper.Store, rec reaper.Record) {
	t.Helper()
	if err := s.PutRecord(t.Context(), rec); err != nil {
		t.Fatalf("PutRecord(%+v): %v", rec, err)
	}
}

func TestMemStore_HistoryLimitZeroReturnsRest(t *testing.T) {
	s := newMemStore(t, reaper.MemStoreOptions{})
	for i := range 5 { // five changes of status: five history entries
		st := reaper.StatusUp
		if i%2 == 1 {
			st = reaper.StatusDown
		}
		mustPut(t, s, reaper.Record{AppID: "a", Status: st, Cause: string(rune('0' + i))})
	}
	page, total, err := s.History(t.Context(), "a", 1, 0)
	if err != nil || total != 5 || len(page) != 4 || page[0].Cause != "3" || page[3].Cause != "0" {
		t.Fatalf("History(offset 1, limit 0) = %+v, %d, %v; want the 4 older entries", page, total, err)
	}
	page, _, _ = s.History(t.Context(), "a", -3, 2)
	if len(page) != 2 || page[0].Cause != "4" {
		t.Fatalf("History(offset -3, limit 2) = %+v; want the 2 newest", page)
	}
}

func TestMemStore_LockRefusesNonPositiveTTL(t *testing.T) {
	s := newMemStore(t, reaper.MemStoreOptions{})
	if l, err := s.Lock(t.Context(), "a", 0, 0); err == nil || l != nil {
		t.Fatalf("Lock(ttl 0) = %v, %v; want an error", l, err)
	}
	if _, err := s.Lock(t.Context(), "a", 0, time.Minute); err != nil {
		t.Fatalf("a refused Lock must not hold the app: %v", err)
	}
}

func TestMemStore_InFlightExpiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t, reaper.MemStoreOptions{})
		if err := s.SetInFlight(t.Context(), "n1", map[string]int{"a": 2}, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30*time.Second - time.Nanosecond)
		if got, _ := s.InFlight(t.Context()); got["a"] != 2 {
			t.Fatalf("InFlight just before the ttl = %v, want a:2", got)
		}
		// Set again: the node is alive, its counts live another ttl.
		if err := s.SetInFlight(t.Context(), "n1", map[string]int{"a": 1}, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(29 * time.Second)
		if got, _ := s.InFlight(t.Context()); got["a"] != 1 {
			t.Fatalf("InFlight after a renewal = %v, want a:1", got)
		}
		time.Sleep(time.Second)
		if got, _ := s.InFlight(t.Context()); len(got) != 0 {
			t.Fatalf("InFlight after the ttl = %v, want none", got)
		}
	})
}

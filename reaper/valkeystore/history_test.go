package valkeystore

import (
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/reaper"
)

// Push and trim are one step: appends racing from two nodes never leave more
// than the cap, and none of the latest entries is lost.
func TestAppendHistory_ConcurrentKeepsCap(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	a := newStore(t, srv, Options{})
	b := newStore(t, srv, Options{Prefix: a.k.records[:len(a.k.records)-len("records")]})
	const workers, each = 8, 80 // 640 > HistoryCap
	var wg sync.WaitGroup
	for w := range workers {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for i := range each {
				tr := reaper.Transition{AppID: "x", From: reaper.StatusUp, To: reaper.StatusDown,
					Cause: strconv.Itoa(w*each + i), At: time.Now()}
				if err := s.AppendHistory(t.Context(), tr); err != nil {
					t.Errorf("AppendHistory: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	page, total, err := a.History(t.Context(), "x", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != reaper.HistoryCap || len(page) != reaper.HistoryCap {
		t.Fatalf("History = %d entries, total %d; want %d", len(page), total, reaper.HistoryCap)
	}
	if n, err := srv.Do("LLEN", a.k.historyPrefix+"x"); err != nil || n != strconv.Itoa(reaper.HistoryCap) {
		t.Fatalf("LLEN = %s, %v; want %d", n, err, reaper.HistoryCap)
	}
	// Each worker's last entry is among the kept ones (they are the newest of each).
	seen := map[string]bool{}
	for _, tr := range page {
		seen[tr.Cause] = true
	}
	for w := range workers {
		if last := strconv.Itoa(w*each + each - 1); !seen[last] {
			t.Errorf("worker %d's last entry (%s) was trimmed", w, last)
		}
	}
}

func TestHistory_NegativeOffsetAndNoLimit(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	for i := range 5 {
		if err := s.AppendHistory(t.Context(), reaper.Transition{AppID: "x", Cause: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	page, total, err := s.History(t.Context(), "x", -3, 0)
	if err != nil || total != 5 || len(page) != 5 || page[0].Cause != "4" || page[4].Cause != "0" {
		t.Errorf("History(-3, 0) = %+v, total %d, err %v; want all 5, newest first", page, total, err)
	}
	page, _, err = s.History(t.Context(), "x", 3, math.MaxInt) // offset+limit overflows an int
	if err != nil || len(page) != 2 || page[0].Cause != "1" {
		t.Errorf("History(3, MaxInt) = %+v, err %v; want the 2 oldest", page, err)
	}
	page, _, err = s.History(t.Context(), "x", 2, -1)
	if err != nil || len(page) != 3 || page[0].Cause != "2" {
		t.Errorf("History(2, -1) = %+v, err %v; want the 3 oldest", page, err)
	}
}

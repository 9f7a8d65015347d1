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

// A record and its history entry are one step: puts racing from two nodes on one
// app never leave more than the cap, and the history always chains — each
// entry's From is the To of the entry before it, and the newest entry's To is the
// stored record's status. A put whose entry were written apart from its record
// would break the chain.
func TestPutRecord_ConcurrentHistoryChainsAndKeepsCap(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	a := newStore(t, srv, Options{})
	b := newStore(t, srv, Options{Prefix: a.k.records[:len(a.k.records)-len("records")]})
	const workers, each = 8, 150
	statuses := []reaper.Status{reaper.StatusUp, reaper.StatusWaitingForShutdown, reaper.StatusDown, reaper.StatusWaitingForUp}
	var wg sync.WaitGroup
	for w := range workers {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for i := range each {
				rec := reaper.Record{AppID: "x", Status: statuses[(w+i)%len(statuses)], Cause: strconv.Itoa(w*each + i), LastStatusUpdate: time.Now()}
				if err := s.PutRecord(t.Context(), rec); err != nil {
					t.Errorf("PutRecord: %v", err)
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
	if total > reaper.HistoryCap || len(page) != total || total < 100 {
		t.Fatalf("History = %d entries, total %d; want between 100 and the cap, %d", len(page), total, reaper.HistoryCap)
	}
	if n, err := srv.Do("LLEN", a.k.historyPrefix+"x"); err != nil || n != strconv.Itoa(total) {
		t.Fatalf("LLEN = %s, %v; want %d", n, err, total)
	}
	rec, _, err := a.Record(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	// Only the status must agree: a put that kept the status (two workers may
	// write the same one in a row) changed the record's cause and wrote no entry.
	if page[0].To != rec.Status {
		t.Fatalf("newest entry %+v, stored record %s %q: their statuses must agree", page[0], rec.Status, rec.Cause)
	}
	for i := 0; i+1 < len(page); i++ {
		if page[i].From != page[i+1].To || page[i].From == page[i].To {
			t.Fatalf("history does not chain at %d: %+v after %+v", i, page[i], page[i+1])
		}
	}
}

// A stored record that cannot be decoded counts as none: its replacement's entry
// comes from WaitingForInit, and the put succeeds.
func TestPutRecord_CorruptStoredRecordCountsAsNone(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	if _, err := srv.Do("HSET", s.k.records, "x", "{not json"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRecord(t.Context(), reaper.Record{AppID: "x", Status: reaper.StatusUp, Cause: "seen"}); err != nil {
		t.Fatal(err)
	}
	page, _, err := s.History(t.Context(), "x", 0, 0)
	if err != nil || len(page) != 1 || page[0].From != reaper.StatusWaitingForInit || page[0].To != reaper.StatusUp {
		t.Fatalf("history = %+v, %v; want WaitingForInit → Up", page, err)
	}
}

func TestHistory_NegativeOffsetAndNoLimit(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	for i := range 5 { // five changes of status: five history entries
		st := reaper.StatusUp
		if i%2 == 1 {
			st = reaper.StatusDown
		}
		if err := s.PutRecord(t.Context(), reaper.Record{AppID: "x", Status: st, Cause: strconv.Itoa(i)}); err != nil {
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

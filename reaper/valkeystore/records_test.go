package valkeystore

import (
	"errors"
	"github.com/reapergw/reaper/internal/logtest"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/reaper"
)

// Two leaders, of terms 5 and 6, write the same app at once, many times: once a
// term-6 write has succeeded, no term-5 write may succeed, and term 6 stays.
func TestPutRecord_TermFenceUnderConcurrency(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	old := newStore(t, srv, Options{})
	prefix := old.k.records[:len(old.k.records)-len("records")]
	cur := newStore(t, srv, Options{Prefix: prefix}) // another node, same data
	const writes = 200

	var sixWritten atomic.Bool
	var lateFives, fivesOK atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		<-start
		for i := range writes {
			after := sixWritten.Load() // read before the call: the call started after it
			err := old.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: reaper.StatusDown, Cause: "five " + strconv.Itoa(i), Term: 5})
			switch {
			case err == nil && after:
				lateFives.Add(1)
			case err == nil:
				fivesOK.Add(1)
			case !errors.Is(err, reaper.ErrStaleTerm):
				t.Errorf("PutRecord(term 5): %v", err)
				return
			}
		}
	})
	wg.Go(func() {
		<-start
		for i := range writes {
			if err := cur.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: reaper.StatusUp, Cause: "six " + strconv.Itoa(i), Term: 6}); err != nil {
				t.Errorf("PutRecord(term 6): %v", err)
				return
			}
			sixWritten.Store(true)
			// Every read after a term-6 write sees term 6.
			if rec, ok, err := old.Record(t.Context(), "a"); err != nil || !ok || rec.Term != 6 {
				t.Errorf("Record after a term-6 write = %+v, ok %v, err %v; want term 6", rec, ok, err)
				return
			}
		}
	})
	close(start)
	wg.Wait()
	if n := lateFives.Load(); n != 0 {
		t.Errorf("%d term-5 writes succeeded after a term-6 write had", n)
	}
	rec, ok, err := old.Record(t.Context(), "a")
	if err != nil || !ok || rec.Term != 6 || rec.Cause != "six "+strconv.Itoa(writes-1) {
		t.Errorf("final record = %+v, ok %v, err %v; want the last term-6 write", rec, ok, err)
	}
	t.Logf("term-5 writes that went through before the first term-6 write: %d of %d", fivesOK.Load(), writes)
}

// Terms are compared exactly, as numbers, across digit counts and up to the
// largest uint64 (which a Lua double cannot hold).
func TestPutRecord_TermsCompareAsNumbers(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	const maxTerm = ^uint64(0)
	for _, c := range []struct {
		stored, given uint64
		stale         bool
	}{
		{9, 10, false},
		{10, 9, true},
		{100, 99, true},
		{99, 100, false},
		{maxTerm, maxTerm - 1, true},
		{maxTerm - 1, maxTerm, false},
		{maxTerm, maxTerm, false},
		{0, 0, false},
	} {
		app := "app-" + strconv.FormatUint(c.stored, 10) + "-" + strconv.FormatUint(c.given, 10)
		if err := s.PutRecord(t.Context(), reaper.Record{AppID: app, Term: c.stored}); err != nil {
			t.Fatalf("PutRecord(%s, term %d): %v", app, c.stored, err)
		}
		err := s.PutRecord(t.Context(), reaper.Record{AppID: app, Term: c.given})
		if got := errors.Is(err, reaper.ErrStaleTerm); got != c.stale || (err != nil && !got) {
			t.Errorf("stored %d, PutRecord(term %d) = %v; want stale %v", c.stored, c.given, err, c.stale)
		}
		err = s.DeleteRecord(t.Context(), app, c.given)
		if got := errors.Is(err, reaper.ErrStaleTerm); got != c.stale || (err != nil && !got) {
			t.Errorf("stored %d, DeleteRecord(term %d) = %v; want stale %v", c.stored, c.given, err, c.stale)
		}
	}
}

func TestPrefix_IsolatesClusters(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	a := newStore(t, srv, Options{Prefix: "cluster-a:"})
	b := newStore(t, srv, Options{Prefix: "cluster-b:"})
	if err := a.PutRecord(t.Context(), reaper.Record{AppID: "x", Term: 9}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutSettings(t.Context(), reaper.Settings{KillSwitch: true}); err != nil {
		t.Fatal(err)
	}
	if recs, err := b.Records(t.Context()); err != nil || len(recs) != 0 {
		t.Errorf("another prefix's Records = %v, %v; want none", recs, err)
	}
	if set, err := b.Settings(t.Context()); err != nil || set.KillSwitch {
		t.Errorf("another prefix's Settings = %+v, %v; want zero", set, err)
	}
	// Nor does the term fence of one cluster reach the other.
	if err := b.PutRecord(t.Context(), reaper.Record{AppID: "x", Term: 1}); err != nil {
		t.Errorf("PutRecord under another prefix: %v", err)
	}
	if got, err := srv.Do("HEXISTS", "cluster-a:records", "x"); err != nil || got != "1" {
		t.Errorf("HEXISTS cluster-a:records x = %q, %v; want the record under its prefix", got, err)
	}
	if got, err := srv.Do("EXISTS", "reaper:records"); err != nil || got != "0" {
		t.Errorf("EXISTS reaper:records = %q, %v; want nothing under the default prefix", got, err)
	}
}

func TestPrefix_Default(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s, err := New(t.Context(), Options{Address: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutRecord(t.Context(), reaper.Record{AppID: "x"}); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Do("HEXISTS", "reaper:records", "x"); err != nil || got != "1" {
		t.Errorf("HEXISTS reaper:records x = %q, %v; want 1", got, err)
	}
}

// A value that is not a record fails Record with ErrCorrupt and is left out of
// Records, which still lists the good ones.
func TestRecords_CorruptValue(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	var logs logtest.Buffer
	s := newStore(t, srv, Options{Logger: logs.Logger(slog.LevelDebug)})
	if err := s.PutRecord(t.Context(), reaper.Record{AppID: "good", Status: reaper.StatusUp}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("HSET", s.k.records, "bad", "{not json"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Record(t.Context(), "bad"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Record(bad) = %v, want ErrCorrupt", err)
	}
	recs, err := s.Records(t.Context())
	if err != nil || len(recs) != 1 || recs[0].AppID != "good" {
		t.Errorf("Records = %+v, %v; want only the good record", recs, err)
	}
	if out := logs.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "app=bad") {
		t.Errorf("the bad record is not logged at Error with its app:\n%s", out)
	}
}

func TestSettings_CorruptValue(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	if _, err := srv.Do("SET", s.k.settings, "[]"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settings(t.Context()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Settings = %v, want ErrCorrupt", err)
	}
}

package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

func testWatch(t *testing.T, s reaper.Store) {
	w, ok := s.(reaper.RecordWatcher)
	if !ok {
		t.Skip("the store does not implement reaper.RecordWatcher")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan string, 64)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		// Whether Watch returns at once or runs until ctx ends is the store's choice.
		w.Watch(ctx, func(app string) {
			select {
			case got <- app:
			default: // the test has seen enough
			}
		})
	}()

	// A store may take a moment to subscribe: put again until one is noticed.
	deadline := time.Now().Add(waitFor)
	for i := 0; ; i++ {
		rec := reaper.Record{AppID: "watched", Status: reaper.StatusUp, Cause: fmt.Sprint("put ", i)}
		mustPut(t, s, rec)
		select {
		case app := <-got:
			if app != "watched" {
				t.Fatalf("Watch reported app %q, want %q", app, "watched")
			}
		case <-time.After(200 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("no Watch notification within %v of PutRecord", waitFor)
			}
			continue
		}
		break
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(waitFor):
		t.Fatalf("Watch still running %v after its context ended", waitFor)
	}
}

func testCancelledContext(t *testing.T, s reaper.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	now := time.Now()
	calls := map[string]func(){
		"Record":    func() { _, _, _ = s.Record(ctx, "a") },
		"Records":   func() { _, _ = s.Records(ctx) },
		"PutRecord": func() { _ = s.PutRecord(ctx, reaper.Record{AppID: "a", Status: reaper.StatusUp}) },
		"DeleteRecord": func() {
			_ = s.DeleteRecord(ctx, "a", 0)
		},
		"History":     func() { _, _, _ = s.History(ctx, "a", 0, 10) },
		"TouchAccess": func() { _ = s.TouchAccess(ctx, map[string]time.Time{"a": now}) },
		"LastAccess":  func() { _, _ = s.LastAccess(ctx) },
		"SetInFlight": func() { _ = s.SetInFlight(ctx, "n", map[string]int{"a": 1}, time.Minute) },
		"InFlight":    func() { _, _ = s.InFlight(ctx) },
		"AskWake":     func() { _ = s.AskWake(ctx, "a", now, time.Minute) },
		"WakeAsks":    func() { _, _ = s.WakeAsks(ctx) },
		"ClearWake":   func() { _ = s.ClearWake(ctx, "a", now) },
		"Settings":    func() { _, _ = s.Settings(ctx) },
		"PutSettings": func() { _ = s.PutSettings(ctx, reaper.Settings{}) },
		"Enqueue":     func() { _, _ = s.Enqueue(ctx, "q", reaper.QueuedEvent{ID: "e"}, 10) },
		"Pending":     func() { _, _ = s.Pending(ctx, "q", 10) },
		"Ack":         func() { _ = s.Ack(ctx, "q", "e") },
		"Lock": func() {
			if l, err := s.Lock(ctx, "a", 0, time.Minute); err == nil {
				_ = l.Release(t.Context())
			}
		},
	}
	for name, call := range calls {
		withTimeout(t, name+" with a cancelled context", call)
	}
	// A held lock's methods too.
	l := mustLock(t, s, "b", time.Minute)
	withTimeout(t, "Extend with a cancelled context", func() { _ = l.Extend(ctx, time.Minute) })
	withTimeout(t, "Release with a cancelled context", func() { _ = l.Release(ctx) })
	if w, ok := s.(reaper.RecordWatcher); ok {
		withTimeout(t, "Watch with a cancelled context", func() { w.Watch(ctx, func(string) {}) })
	}
}

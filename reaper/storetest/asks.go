package storetest

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

const askTTL = 30 * time.Minute

func mustAsk(t *testing.T, s reaper.Store, app string, at time.Time, ttl time.Duration) {
	t.Helper()
	if err := s.AskWake(t.Context(), app, at, ttl); err != nil {
		t.Fatalf("AskWake(%s, %v): %v", app, at, err)
	}
}

func mustClear(t *testing.T, s reaper.Store, app string, upTo time.Time) {
	t.Helper()
	if err := s.ClearWake(t.Context(), app, upTo); err != nil {
		t.Fatalf("ClearWake(%s, %v): %v", app, upTo, err)
	}
}

func checkAsks(t *testing.T, s reaper.Store, want map[string]time.Time) {
	t.Helper()
	got, err := s.WakeAsks(t.Context())
	if err != nil {
		t.Fatalf("WakeAsks: %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("WakeAsks = %v, want %v", got, want)
	}
	for app, w := range want {
		if g, ok := got[app]; !ok || !g.Equal(w) {
			t.Errorf("WakeAsks[%s] = %v (present %v), want %v", app, g, ok, w)
		}
	}
}

func testAskLaterWins(t *testing.T, s reaper.Store) {
	checkAsks(t, s, map[string]time.Time{})
	t1, t2 := base, base.Add(10*time.Second)
	mustAsk(t, s, "a", t1, askTTL)
	mustAsk(t, s, "b", t1, askTTL)
	checkAsks(t, s, map[string]time.Time{"a": t1, "b": t1})
	mustAsk(t, s, "a", t2, askTTL)
	checkAsks(t, s, map[string]time.Time{"a": t2, "b": t1})
	// An earlier ask arriving late (from a slow node) does not move the time back.
	mustAsk(t, s, "a", t1, askTTL)
	checkAsks(t, s, map[string]time.Time{"a": t2, "b": t1})
}

func testAskClearUpTo(t *testing.T, s reaper.Store) {
	t1, t2 := base, base.Add(10*time.Second)
	mustAsk(t, s, "a", t2, askTTL)
	mustAsk(t, s, "b", t1, askTTL)

	// The job handled the ask of t1; an ask made since (t2) must survive.
	mustClear(t, s, "a", t1)
	checkAsks(t, s, map[string]time.Time{"a": t2, "b": t1})
	mustClear(t, s, "a", t2.Add(-time.Millisecond))
	checkAsks(t, s, map[string]time.Time{"a": t2, "b": t1})
	// At or before upTo: removed.
	mustClear(t, s, "a", t2)
	checkAsks(t, s, map[string]time.Time{"b": t1})
	mustClear(t, s, "b", t2)
	checkAsks(t, s, map[string]time.Time{})
	// Nothing to clear is not an error.
	mustClear(t, s, "b", t2)
	mustClear(t, s, "never-asked", t2)
}

func testAskExpires(t *testing.T, s reaper.Store) {
	mustAsk(t, s, "kept", base, askTTL)
	asked := time.Now()
	mustAsk(t, s, "short", base, shortTTL)
	got, err := s.WakeAsks(t.Context())
	if err != nil {
		t.Fatalf("WakeAsks: %v", err)
	}
	if _, ok := got["short"]; !ok && time.Since(asked) < shortTTL {
		t.Errorf("WakeAsks before expiry = %v, want the short ask", got)
	}
	eventually(t, "an ask expires after its ttl", func() (bool, string) {
		got, err := s.WakeAsks(t.Context())
		if err != nil {
			t.Fatalf("WakeAsks: %v", err)
		}
		_, short := got["short"]
		_, kept := got["kept"]
		if !kept {
			t.Fatalf("an ask with a 30 min ttl disappeared: %v", got)
		}
		return !short, "short ask still there"
	})
}

func testSettings(t *testing.T, s reaper.Store) {
	got, err := s.Settings(t.Context())
	if err != nil || got != (reaper.Settings{}) {
		t.Fatalf("Settings of a fresh store = %+v, err %v; want zero", got, err)
	}
	for _, want := range []reaper.Settings{
		{DryRun: true},
		{KillSwitch: true},
		{DryRun: true, KillSwitch: true},
		{},
	} {
		if err := s.PutSettings(t.Context(), want); err != nil {
			t.Fatalf("PutSettings(%+v): %v", want, err)
		}
		got, err := s.Settings(t.Context())
		if err != nil || got != want {
			t.Fatalf("Settings after PutSettings(%+v) = %+v, err %v", want, got, err)
		}
	}
}

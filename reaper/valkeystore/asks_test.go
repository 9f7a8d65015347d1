package valkeystore

import (
	"strconv"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
)

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// An ask made within the same millisecond as the one the job handled, but later,
// survives ClearWake: times are kept to the microsecond.
func TestClearWake_SubMillisecond(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	handled := time.Date(2025, 3, 14, 9, 0, 0, 100_000, time.UTC)
	later := handled.Add(500 * time.Microsecond)
	if err := s.AskWake(t.Context(), "a", later, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearWake(t.Context(), "a", handled); err != nil {
		t.Fatal(err)
	}
	asks, err := s.WakeAsks(t.Context())
	if err != nil || !asks["a"].Equal(later) {
		t.Fatalf("WakeAsks = %v, %v; want a at %v", asks, err, later)
	}
	if err := s.ClearWake(t.Context(), "a", later); err != nil {
		t.Fatal(err)
	}
	if asks, err := s.WakeAsks(t.Context()); err != nil || len(asks) != 0 {
		t.Fatalf("WakeAsks after clearing up to the ask = %v, %v; want none", asks, err)
	}
}

// A later ask with a shorter ttl keeps the earlier, longer expiry; an earlier ask
// keeps the later time but pushes the expiry.
func TestAskWake_KeepsLatestExpiry(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	if err := s.AskWake(t.Context(), "a", at, 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AskWake(t.Context(), "a", at.Add(time.Second), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	score, err := srv.Do("ZSCORE", s.k.asksExpiry, "a")
	if err != nil {
		t.Fatal(err)
	}
	left := time.Until(time.UnixMilli(atoi(t, score)))
	if left < 29*time.Minute {
		t.Errorf("a 1 ms ask cut the 30 min ask's life to %v", left)
	}
	asks, err := s.WakeAsks(t.Context())
	if err != nil || !asks["a"].Equal(at.Add(time.Second)) {
		t.Errorf("WakeAsks = %v, %v; want the later time", asks, err)
	}
	// A ttl of 0 adds nothing new.
	if err := s.AskWake(t.Context(), "b", at, 0); err != nil {
		t.Fatal(err)
	}
	if asks, err := s.WakeAsks(t.Context()); err != nil || len(asks) != 1 {
		t.Errorf("WakeAsks after an ask with no ttl = %v, %v; want only a", asks, err)
	}
}

// Expired asks are dropped from both structures when listed.
func TestWakeAsks_ForgetsExpired(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	if err := s.AskWake(t.Context(), "a", time.Now(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ask expires", func() bool {
		asks, err := s.WakeAsks(t.Context())
		return err == nil && len(asks) == 0
	})
	for _, key := range []string{s.k.asks, s.k.asksExpiry} {
		if got, err := srv.Do("EXISTS", key); err != nil || got != "0" {
			t.Errorf("EXISTS %s = %q, %v; want the expired ask gone", key, got, err)
		}
	}
}

package valkeystore

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
)

func TestTouchAccess_KeepsMicroseconds(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	at := time.Date(2025, 3, 14, 9, 26, 53, 589_793_238, time.FixedZone("CET", 3600))
	if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": at, "b": at.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// 1 µs later wins; 999 ns earlier (the same microsecond, truncated) does not move it.
	if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": at.Add(-999), "b": at.Add(-time.Hour + time.Microsecond)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LastAccess(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := at.Truncate(time.Microsecond); !got["a"].Equal(want) {
		t.Errorf("LastAccess[a] = %v, want %v", got["a"], want)
	}
	if want := at.Add(-time.Hour + time.Microsecond).Truncate(time.Microsecond); !got["b"].Equal(want) {
		t.Errorf("LastAccess[b] = %v, want %v", got["b"], want)
	}
	if got["a"].Location() != time.UTC {
		t.Errorf("LastAccess times are in %v, want UTC", got["a"].Location())
	}
}

// A node whose counts expired is dropped from the list of nodes, and only it.
func TestInFlight_ForgetsExpiredNodes(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	if err := s.SetInFlight(t.Context(), "live", map[string]int{"a": 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInFlight(t.Context(), "dying", map[string]int{"a": 2}, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Do("SMEMBERS", s.k.inflightNodes); err != nil || len(got) != len("live\ndying") {
		t.Fatalf("SMEMBERS = %q, %v; want both nodes", got, err)
	}
	waitFor(t, "the dying node's counts expire", func() bool {
		got, err := s.InFlight(t.Context())
		return err == nil && got["a"] == 1
	})
	if got, err := srv.Do("SMEMBERS", s.k.inflightNodes); err != nil || got != "live" {
		t.Errorf("SMEMBERS after expiry = %q, %v; want live only", got, err)
	}
	// Counts of zero are not stored; no counts at all unlist the node.
	if err := s.SetInFlight(t.Context(), "live", map[string]int{"a": 0}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Do("SMEMBERS", s.k.inflightNodes); err != nil || got != "" {
		t.Errorf("SMEMBERS after empty counts = %q, %v; want none", got, err)
	}
}

func TestSetInFlight_TTL(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	if err := s.SetInFlight(t.Context(), "n", map[string]int{"a": 1}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	pttl, err := srv.Do("PTTL", s.k.inflightPrefix+"n")
	if err != nil {
		t.Fatal(err)
	}
	if ms := atoi(t, pttl); ms <= 25_000 || ms > 30_000 {
		t.Errorf("PTTL of the node's counts = %d ms, want about 30000", ms)
	}
	if err := s.SetInFlight(t.Context(), "n", map[string]int{"a": 1}, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.InFlight(t.Context()); err != nil || len(got) != 0 {
		t.Errorf("InFlight after a ttl of 0 = %v, %v; want none", got, err)
	}
}

func TestCeilMillis(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0:                                 0,
		-time.Second:                      -1000,
		time.Nanosecond:                   1,
		time.Millisecond:                  1,
		time.Millisecond + 1:              2,
		300 * time.Millisecond:            300,
		30*time.Minute - time.Microsecond: 1_800_000,
	} {
		if got := ceilMillis(d); got != want {
			t.Errorf("ceilMillis(%v) = %d, want %d", d, got, want)
		}
	}
}

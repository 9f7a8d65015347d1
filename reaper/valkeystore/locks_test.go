package valkeystore

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/reaper"
)

// twoNodes returns two stores on one server with the same prefix: two nodes of a
// cluster.
func twoNodes(t *testing.T, srv *redistest.Server, opts Options) (*Store, *Store) {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = freshPrefix()
	}
	return newStore(t, srv, opts), newStore(t, srv, opts)
}

// 20 contenders across two nodes, several rounds: exactly one holder each time,
// and a release lets the next round have one again.
func TestLock_TwoNodesOneHolder(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	n1, n2 := twoNodes(t, srv, Options{})
	for round := range 5 {
		var winners atomic.Int32
		var held reaper.Lock
		var mu sync.Mutex
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 20 {
			s := n1
			if i%2 == 1 {
				s = n2
			}
			wg.Go(func() {
				<-start
				l, err := s.Lock(t.Context(), "app", 0, time.Minute)
				switch {
				case err == nil:
					winners.Add(1)
					mu.Lock()
					held = l
					mu.Unlock()
				case !errors.Is(err, reaper.ErrLocked):
					t.Errorf("Lock: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d holders, want exactly 1", round, n)
		}
		if err := held.Release(t.Context()); err != nil {
			t.Fatalf("round %d: Release: %v", round, err)
		}
	}
}

// Only the holder extends or releases; the other node's stale handle does nothing
// once the lock expired and changed hands.
func TestLock_ExpiryAcrossNodes(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	n1, n2 := twoNodes(t, srv, Options{})
	first, err := n1.Lock(t.Context(), "app", 0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var second reaper.Lock
	waitFor(t, "the other node takes the expired lock", func() bool {
		second, err = n2.Lock(t.Context(), "app", 0, time.Minute)
		if err != nil && !errors.Is(err, reaper.ErrLocked) {
			t.Fatalf("Lock: %v", err)
		}
		return err == nil
	})
	if err := first.Extend(t.Context(), time.Minute); !errors.Is(err, reaper.ErrLockLost) {
		t.Errorf("Extend by the expired holder = %v, want ErrLockLost", err)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Errorf("Release by the expired holder = %v, want nil", err)
	}
	if _, err := n1.Lock(t.Context(), "app", 0, time.Minute); !errors.Is(err, reaper.ErrLocked) {
		t.Errorf("Lock after the stale Release = %v, want ErrLocked (the new holder keeps it)", err)
	}
	if err := second.Extend(t.Context(), 2*time.Minute); err != nil {
		t.Errorf("Extend by the holder: %v", err)
	}
	if pttl, err := srv.Do("PTTL", n2.k.lockPrefix+"app"); err != nil || atoi(t, pttl) <= 60_000 {
		t.Errorf("PTTL after Extend(2m) = %s, %v; want over a minute", pttl, err)
	}
	if err := second.Release(t.Context()); err != nil {
		t.Errorf("Release by the holder: %v", err)
	}
	if got, err := srv.Do("EXISTS", n2.k.lockPrefix+"app"); err != nil || got != "0" {
		t.Errorf("the lock key after Release: EXISTS = %s, %v; want 0", got, err)
	}
}

func TestLock_TTL(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	s := newStore(t, srv, Options{})
	for _, ttl := range []time.Duration{0, -time.Second} {
		if l, err := s.Lock(t.Context(), "app", 0, ttl); err == nil || errors.Is(err, reaper.ErrLocked) {
			t.Errorf("Lock(ttl %v) = %v, %v; want a refusal", ttl, l, err)
		}
	}
	// A sub-millisecond ttl rounds up, rather than to 0 (which SET refuses).
	if _, err := s.Lock(t.Context(), "tiny", 0, 300*time.Microsecond); err != nil {
		t.Errorf("Lock(300µs): %v", err)
	}
	l, err := s.Lock(t.Context(), "app", 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(t.Context(), 0); err == nil {
		t.Errorf("Extend(0) succeeded")
	}
}

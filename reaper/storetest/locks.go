package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

func mustLock(t *testing.T, s reaper.Store, app string, ttl time.Duration) reaper.Lock {
	t.Helper()
	l, err := s.Lock(t.Context(), app, 0, ttl)
	if err != nil {
		t.Fatalf("Lock(%s): %v", app, err)
	}
	if l == nil {
		t.Fatalf("Lock(%s) returned a nil Lock and no error", app)
	}
	return l
}

func expectLocked(t *testing.T, s reaper.Store, app string) {
	t.Helper()
	l, err := s.Lock(t.Context(), app, 0, time.Minute)
	if !errors.Is(err, reaper.ErrLocked) {
		if err == nil {
			_ = l.Release(t.Context())
		}
		t.Fatalf("Lock(%s) while another holds it = %v, want ErrLocked", app, err)
	}
}

// waitUntil waits for the clock, not for a condition: TTL tests need time to pass.
func waitUntil(t *testing.T, at time.Time) {
	select {
	case <-time.After(time.Until(at)):
	case <-t.Context().Done():
	}
}

func testLockExclusive(t *testing.T, s reaper.Store) {
	l := mustLock(t, s, "a", time.Minute)
	expectLocked(t, s, "a")
	other := mustLock(t, s, "b", time.Minute) // locks are per app
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("a second Release = %v, want nil", err)
	}
	l2 := mustLock(t, s, "a", time.Minute)
	// The old holder's Release must not free the new holder's lock.
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release of a lock already released = %v, want nil", err)
	}
	expectLocked(t, s, "a")
	if err := l.Extend(t.Context(), time.Minute); !errors.Is(err, reaper.ErrLockLost) {
		t.Fatalf("Extend of a released lock now held by another = %v, want ErrLockLost", err)
	}
	expectLocked(t, s, "b")
	_ = other.Release(t.Context())
	_ = l2.Release(t.Context())
}

func testLockExpiry(t *testing.T, s reaper.Store) {
	locked := time.Now()
	old := mustLock(t, s, "a", shortTTL)
	_, err := s.Lock(t.Context(), "a", 0, time.Minute)
	if time.Since(locked) < shortTTL && !errors.Is(err, reaper.ErrLocked) {
		t.Fatalf("Lock before the holder's ttl ran out = %v, want ErrLocked", err)
	}
	var taken reaper.Lock
	if err == nil {
		t.Log("the machine was slow: the short lock expired before the second Lock")
	}
	eventually(t, "an expired lock can be taken", func() (bool, string) {
		l, err := s.Lock(t.Context(), "a", 0, time.Minute)
		if err != nil {
			return false, err.Error()
		}
		taken = l
		return true, ""
	})
	if err := old.Extend(t.Context(), time.Minute); !errors.Is(err, reaper.ErrLockLost) {
		t.Fatalf("Extend by the expired holder = %v, want ErrLockLost", err)
	}
	if err := old.Release(t.Context()); err != nil {
		t.Fatalf("Release by the expired holder = %v, want nil (a no-op)", err)
	}
	expectLocked(t, s, "a") // the new holder still has it
	if err := taken.Extend(t.Context(), time.Minute); err != nil {
		t.Fatalf("Extend by the new holder: %v", err)
	}
	if err := taken.Release(t.Context()); err != nil {
		t.Fatalf("Release by the new holder: %v", err)
	}
	_ = mustLock(t, s, "a", time.Minute)
}

func testLockExtend(t *testing.T, s reaper.Store) {
	const ttl = 500 * time.Millisecond
	locked := time.Now()
	l := mustLock(t, s, "a", ttl)
	err := l.Extend(t.Context(), time.Minute)
	if time.Since(locked) >= ttl {
		t.Skipf("the machine was too slow to extend within %v (Extend = %v)", ttl, err)
	}
	if err != nil {
		t.Fatalf("Extend of a live lock: %v", err)
	}
	waitUntil(t, locked.Add(2*ttl))
	expectLocked(t, s, "a") // past the first ttl, held thanks to Extend
	if err := l.Extend(t.Context(), time.Minute); err != nil {
		t.Fatalf("Extend again: %v", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	_ = mustLock(t, s, "a", time.Minute)
}

func testLockExpiredIsLost(t *testing.T, s reaper.Store) {
	locked := time.Now()
	l := mustLock(t, s, "a", shortTTL)
	waitUntil(t, locked.Add(2*shortTTL))
	// Nobody took it, but it expired: whoever holds it must stop acting.
	if err := l.Extend(t.Context(), time.Minute); !errors.Is(err, reaper.ErrLockLost) {
		t.Fatalf("Extend after expiry = %v, want ErrLockLost", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release after expiry = %v, want nil", err)
	}
	_ = mustLock(t, s, "a", time.Minute)
}

func testLockConcurrent(t *testing.T, s reaper.Store) {
	const contenders = 20
	var winners atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range contenders {
		wg.Go(func() {
			<-start
			l, err := s.Lock(t.Context(), "a", 0, time.Minute)
			switch {
			case err == nil && l != nil:
				winners.Add(1)
			case errors.Is(err, reaper.ErrLocked):
			default:
				t.Errorf("Lock = %v, %v; want a lock or ErrLocked", l, err)
			}
		})
	}
	close(start)
	withTimeout(t, "20 concurrent Lock calls", wg.Wait)
	if n := winners.Load(); n != 1 {
		t.Fatalf("%d of %d concurrent Lock calls won, want exactly 1", n, contenders)
	}
}

// A leader of a newer term takes over a lock its deposed predecessor still holds,
// at once; nothing else is taken over: the same or an older term, and never a
// lock taken in term 0 (a single node, an operator).
func testLockTakeover(t *testing.T, s reaper.Store) {
	ctx := t.Context()
	old, err := s.Lock(ctx, "a", 3, time.Minute)
	if err != nil {
		t.Fatalf("Lock in term 3: %v", err)
	}
	for _, term := range []uint64{0, 2, 3} {
		if l, err := s.Lock(ctx, "a", term, time.Minute); !errors.Is(err, reaper.ErrLocked) {
			if err == nil {
				_ = l.Release(ctx)
			}
			t.Fatalf("Lock in term %d of a lock held in term 3 = %v, want ErrLocked", term, err)
		}
	}
	next, err := s.Lock(ctx, "a", 4, time.Minute)
	if err != nil {
		t.Fatalf("Lock in term 4 of a lock held in term 3 = %v, want it taken over", err)
	}
	if err := old.Extend(ctx, time.Minute); !errors.Is(err, reaper.ErrLockLost) {
		t.Fatalf("Extend by the deposed holder = %v, want ErrLockLost", err)
	}
	if err := old.Release(ctx); err != nil {
		t.Fatalf("Release by the deposed holder = %v, want nil (a no-op)", err)
	}
	if l, err := s.Lock(ctx, "a", 4, time.Minute); !errors.Is(err, reaper.ErrLocked) {
		if err == nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("a second Lock in term 4 = %v, want ErrLocked: the deposed holder's Release must not free it", err)
	}
	if err := next.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend by the new holder: %v", err)
	}
	// A lock taken in term 0 is an operator's (or a single node's): never taken over.
	op, err := s.Lock(ctx, "b", 0, time.Minute)
	if err != nil {
		t.Fatalf("Lock in term 0: %v", err)
	}
	if l, err := s.Lock(ctx, "b", 7, time.Minute); !errors.Is(err, reaper.ErrLocked) {
		if err == nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("Lock in term 7 of a lock held in term 0 = %v, want ErrLocked", err)
	}
	// Terms compare as numbers, not as text: 10 is newer than 9.
	nine, err := s.Lock(ctx, "c", 9, time.Minute)
	if err != nil {
		t.Fatalf("Lock in term 9: %v", err)
	}
	if _, err := s.Lock(ctx, "c", 10, time.Minute); err != nil {
		t.Fatalf("Lock in term 10 of a lock held in term 9 = %v, want it taken over", err)
	}
	_ = nine.Release(ctx)
	_ = next.Release(ctx)
	_ = op.Release(ctx)
}

// A holder takes back at once a lock it took in the same term and lost track of
// (its release failed while the store was away); nobody else gains anything by
// it: another holder, the same holder in another term, a plain Lock, all meet
// ErrLocked as before.
func testLockHolderTakesBack(t *testing.T, s reaper.Store) {
	ctx := t.Context()
	lost, err := s.LockAs(ctx, "a", 5, "job-1", time.Minute)
	if err != nil {
		t.Fatalf("LockAs(job-1, term 5): %v", err)
	}
	refused := []struct {
		term   uint64
		holder string
	}{{5, "job-2"}, {5, ""}, {4, "job-1"}, {0, "job-1"}}
	for _, r := range refused {
		var l reaper.Lock
		if r.holder == "" {
			l, err = s.Lock(ctx, "a", r.term, time.Minute)
		} else {
			l, err = s.LockAs(ctx, "a", r.term, r.holder, time.Minute)
		}
		if !errors.Is(err, reaper.ErrLocked) {
			if err == nil {
				_ = l.Release(ctx)
			}
			t.Fatalf("holder %q in term %d, of job-1's lock of term 5 = %v, want ErrLocked", r.holder, r.term, err)
		}
	}
	back, err := s.LockAs(ctx, "a", 5, "job-1", time.Minute)
	if err != nil {
		t.Fatalf("job-1 in term 5 taking back its own lock of term 5 = %v, want it taken", err)
	}
	// The lost handle is a past holder's: it acts on nothing any more.
	if err := lost.Extend(ctx, time.Minute); !errors.Is(err, reaper.ErrLockLost) {
		t.Fatalf("Extend by the lost handle = %v, want ErrLockLost", err)
	}
	if err := lost.Release(ctx); err != nil {
		t.Fatalf("Release by the lost handle = %v, want nil (a no-op)", err)
	}
	if l, err := s.LockAs(ctx, "a", 5, "job-2", time.Minute); !errors.Is(err, reaper.ErrLocked) {
		if err == nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("job-2 after job-1 took its lock back = %v, want ErrLocked: the lost handle's Release must not free it", err)
	}
	if err := back.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend by the holder that took its lock back: %v", err)
	}
	// A newer term still takes over, holder or not.
	newer, err := s.LockAs(ctx, "a", 6, "job-2", time.Minute)
	if err != nil {
		t.Fatalf("job-2 in term 6 of job-1's lock of term 5 = %v, want it taken over", err)
	}
	if l, err := s.LockAs(ctx, "a", 5, "job-1", time.Minute); !errors.Is(err, reaper.ErrLocked) {
		if err == nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("job-1 in term 5 of job-2's lock of term 6 = %v, want ErrLocked", err)
	}
	_ = newer.Release(ctx)

	// A single node's job locks in term 0: it takes back its own lock there too,
	// and never an operator's (Lock, no holder).
	own, err := s.LockAs(ctx, "b", 0, "job-1", time.Minute)
	if err != nil {
		t.Fatalf("LockAs(job-1, term 0): %v", err)
	}
	if _, err := s.LockAs(ctx, "b", 0, "job-1", time.Minute); err != nil {
		t.Fatalf("job-1 in term 0 taking back its own lock of term 0 = %v, want it taken", err)
	}
	_ = own.Release(ctx)
	op := mustLock(t, s, "c", time.Minute)
	if l, err := s.LockAs(ctx, "c", 0, "job-1", time.Minute); !errors.Is(err, reaper.ErrLocked) {
		if err == nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("job-1 in term 0 of an operator's lock = %v, want ErrLocked", err)
	}
	_ = op.Release(ctx)

	for _, bad := range []string{"", "job:1"} {
		if l, err := s.LockAs(ctx, "d", 1, bad, time.Minute); err == nil || errors.Is(err, reaper.ErrLocked) {
			if err == nil {
				_ = l.Release(ctx)
			}
			t.Fatalf("LockAs with holder %q = %v, want an error about the holder", bad, err)
		}
	}
}

package reaper

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"
)

type memLockEntry struct {
	token   string
	term    uint64
	holder  string // LockAs's holder; "" for Lock
	expires time.Time
}

// Lock implements Locker. It never waits; a ttl of 0 or less is refused.
func (s *MemStore) Lock(ctx context.Context, appID string, term uint64, ttl time.Duration) (Lock, error) {
	return s.lock(ctx, appID, term, "", ttl)
}

// LockAs implements Locker.
func (s *MemStore) LockAs(ctx context.Context, appID string, term uint64, holder string, ttl time.Duration) (Lock, error) {
	if err := CheckLockHolder(holder); err != nil {
		return nil, err
	}
	return s.lock(ctx, appID, term, holder, ttl)
}

func (s *MemStore) lock(ctx context.Context, appID string, term uint64, holder string, ttl time.Duration) (Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("reaper: lock %s: ttl %v is not positive", appID, ttl)
	}
	token := rand.Text() // 128 random bits: a lost holder can never match a new one
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.locks[appID]; ok && now.Before(l.expires) && !takesOver(term, l.term) && !takesBack(holder, term, l.holder, l.term) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, appID)
	}
	s.locks[appID] = memLockEntry{token: token, term: term, holder: holder, expires: now.Add(ttl)}
	return &memLock{s: s, app: appID, token: token}, nil
}

// memLock is a lock handed out by MemStore.Lock.
type memLock struct {
	s     *MemStore
	app   string
	token string
}

// Extend implements Lock.
func (l *memLock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	e, ok := l.s.locks[l.app]
	if !ok || e.token != l.token || !now.Before(e.expires) {
		return fmt.Errorf("%w: %s", ErrLockLost, l.app)
	}
	e.expires = now.Add(ttl)
	l.s.locks[l.app] = e
	return nil
}

// Release implements Lock; it is idempotent.
func (l *memLock) Release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.s.mu.Lock()
	if e, ok := l.s.locks[l.app]; ok && e.token == l.token {
		delete(l.s.locks, l.app)
	}
	l.s.mu.Unlock()
	return nil
}

// takesOver reports whether a lock asked for in term may take over one held
// since held (see Locker): only a deposed leader's, of an older term other than 0.
func takesOver(term, held uint64) bool {
	return held != 0 && held < term
}

// takesBack reports whether holder, asking in term, takes back a lock that
// heldBy took in held (see Locker.LockAs): its own, of the same term.
func takesBack(holder string, term uint64, heldBy string, held uint64) bool {
	return holder != "" && holder == heldBy && term == held
}

// CheckLockHolder checks a holder given to Locker.LockAs: not empty, and no ':'
// (the Valkey store keeps it in the lock's value between colons).
func CheckLockHolder(holder string) error {
	if holder == "" || strings.Contains(holder, ":") {
		return fmt.Errorf("reaper: lock holder %q: want a non-empty id without ':'", holder)
	}
	return nil
}

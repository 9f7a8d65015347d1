package valkeystore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/reapergw/reaper/reaper"
)

// A lock's value is "<term>:<random token>", or "<term>:<holder>:<random token>"
// when taken by LockAs. Terms are compared as decimal strings (see
// putRecordScript). KEYS: lock:<app>. ARGV: value, term, ttl in ms, and the
// prefix "<term>:<holder>:" of LockAs (else ""). 1 if the lock is taken: it was
// free, held in an older term other than 0, or held by the same holder in the
// same term (LockAs).
var takeLockScript = valkey.NewLuaScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local mine = ARGV[4] ~= '' and string.sub(cur, 1, #ARGV[4]) == ARGV[4]
  local held = string.match(cur, '^(%d+):')
  local t = ARGV[2]
  if not mine and (not held or held == '0' or not (#held < #t or (#held == #t and held < t))) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1
`)

// KEYS: lock:<app>. ARGV: token, ttl in ms. 1 if the lock was ours and is extended.
var extendLockScript = valkey.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// KEYS: lock:<app>. ARGV: token. 1 if the lock was ours and is freed.
var releaseLockScript = valkey.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Lock implements reaper.Locker: one script that sets the lock to the term and a
// random token, with its ttl, if it is free or a deposed leader's. It never waits
// for the lock: reaper.ErrLocked when another holder has it. The ttl runs on the
// server's clock, to the millisecond (rounded up); a ttl of 0 or less is refused.
//
// A Lock call that fails for want of an answer (timeout, connection lost) may
// still have taken the lock on the server: then it stays taken until its ttl runs
// out, which is what keeps two deciders apart.
func (s *Store) Lock(ctx context.Context, appID string, term uint64, ttl time.Duration) (reaper.Lock, error) {
	return s.lock(ctx, appID, term, "", ttl)
}

// LockAs implements reaper.Locker: Lock, with the holder in the lock's value, so
// that the same holder in the same term takes back a lock it lost track of (a
// release or a Lock's answer lost while Valkey was unreachable) at once rather
// than at the end of its ttl.
func (s *Store) LockAs(ctx context.Context, appID string, term uint64, holder string, ttl time.Duration) (reaper.Lock, error) {
	if err := reaper.CheckLockHolder(holder); err != nil {
		return nil, err
	}
	return s.lock(ctx, appID, term, holder, ttl)
}

func (s *Store) lock(ctx context.Context, appID string, term uint64, holder string, ttl time.Duration) (reaper.Lock, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("valkeystore: lock %s: ttl %v is not positive", appID, ttl)
	}
	t := strconv.FormatUint(term, 10)
	mine := ""
	if holder != "" {
		mine = t + ":" + holder + ":"
	}
	l := &lock{s: s, app: appID, key: s.k.lockPrefix + appID, token: t + ":" + rand.Text()}
	if mine != "" {
		l.token = mine + rand.Text()
	}
	var taken bool
	err := s.call(ctx, "Lock", func(ctx context.Context) error {
		n, err := takeLockScript.Exec(ctx, s.client, []string{l.key},
			[]string{l.token, t, strconv.FormatInt(ceilMillis(ttl), 10), mine}).AsInt64()
		taken = n == 1
		return err
	})
	if err != nil {
		return nil, err
	}
	if !taken {
		return nil, fmt.Errorf("%w: %s", reaper.ErrLocked, appID)
	}
	return l, nil
}

// lock is a lock handed out by Store.Lock; token (its term, then 128 random bits)
// tells it from every other holder's, past or future.
type lock struct {
	s     *Store
	app   string
	key   string
	token string
}

// Extend implements reaper.Lock: one compare-and-expire script. ErrLockLost if the
// lock expired or another holder has it.
func (l *lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("valkeystore: extend lock %s: ttl %v is not positive", l.app, ttl)
	}
	var n int64
	err := l.s.call(ctx, "Extend", func(ctx context.Context) error {
		var err error
		n, err = extendLockScript.Exec(ctx, l.s.client, []string{l.key},
			[]string{l.token, strconv.FormatInt(ceilMillis(ttl), 10)}).AsInt64()
		return err
	})
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%w: %s", reaper.ErrLockLost, l.app)
	}
	return nil
}

// Release implements reaper.Lock: one compare-and-delete script, so that a holder
// whose lock expired never frees its successor's. Releasing a lost lock is not an
// error; idempotent. When it fails (Valkey unreachable), the lock frees itself at
// the end of its ttl.
func (l *lock) Release(ctx context.Context) error {
	return l.s.call(ctx, "Release", func(ctx context.Context) error {
		return releaseLockScript.Exec(ctx, l.s.client, []string{l.key}, []string{l.token}).Error()
	})
}

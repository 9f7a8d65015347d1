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

// Lock implements reaper.Locker: one SET NX PX with a random token. It never waits
// for the lock: reaper.ErrLocked when another holder has it. The ttl runs on the
// server's clock, to the millisecond (rounded up); a ttl of 0 or less is refused.
//
// A Lock call that fails for want of an answer (timeout, connection lost) may
// still have taken the lock on the server: then it stays taken until its ttl runs
// out, which is what keeps two deciders apart.
func (s *Store) Lock(ctx context.Context, appID string, ttl time.Duration) (reaper.Lock, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("valkeystore: lock %s: ttl %v is not positive", appID, ttl)
	}
	l := &lock{s: s, app: appID, key: s.k.lockPrefix + appID, token: rand.Text()}
	var taken bool
	err := s.call(ctx, "Lock", func(ctx context.Context) error {
		err := s.client.Do(ctx, s.client.B().Set().Key(l.key).Value(l.token).Nx().
			PxMilliseconds(ceilMillis(ttl)).Build()).Error()
		if valkey.IsValkeyNil(err) { // NX refused: someone holds it
			return nil
		}
		taken = err == nil
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

// lock is a lock handed out by Store.Lock; token (128 random bits) tells it from
// every other holder's, past or future.
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

package acmestore

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/valkey-io/valkey-go"
)

// KEYS: locks/<name>. ARGV: token, ttl in ms. 1 if the lock was ours and is extended.
var extendScript = valkey.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// KEYS: locks/<name>. ARGV: token. 1 if the lock was ours and is freed.
var releaseScript = valkey.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// heldLock is a lock this storage holds, and the goroutine that refreshes it.
type heldLock struct {
	token string
	stop  chan struct{} // closed to stop the refresh
	done  chan struct{} // closed when the refresh has stopped
}

// Lock implements certmagic.Locker: SET NX PX with a random token, tried every
// Options.LockPoll (with jitter) until it is free or ctx ends. Once taken, the
// lock is refreshed every third of Options.LockTTL until Unlock, so it only
// expires when its holder stops (a node that died): then the next Lock gets it
// at most LockTTL later. An error of Valkey ends the wait with that error.
func (s *Valkey) Lock(ctx context.Context, name string) error {
	key := s.locks + name
	token := rand.Text()
	for {
		var taken bool
		err := s.call(ctx, "lock", name, func(ctx context.Context) error {
			err := s.client.Do(ctx, s.client.B().Set().Key(key).Value(token).Nx().Px(s.opts.LockTTL).Build()).Error()
			if valkey.IsValkeyNil(err) { // NX: someone holds it
				return nil
			}
			taken = err == nil
			return err
		})
		if err != nil {
			return err
		}
		if taken {
			return s.hold(ctx, name, key, token)
		}
		wait := s.opts.LockPoll/2 + mrand.N(s.opts.LockPoll)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("acmestore: lock %q: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// hold records the lock just taken and starts refreshing it. A closed storage
// frees it at once.
func (s *Valkey) hold(ctx context.Context, name, key, token string) error {
	h := &heldLock{token: token, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.held[name] = h
	}
	s.mu.Unlock()
	if closed {
		_ = s.release(context.WithoutCancel(ctx), name, key, token)
		return fmt.Errorf("acmestore: lock %q: the storage is closed", name)
	}
	go s.refresh(name, key, h)
	return nil
}

// refresh extends the lock every third of its ttl until h.stop is closed or
// the lock is found lost.
func (s *Valkey) refresh(name, key string, h *heldLock) {
	defer close(h.done)
	tick := time.NewTicker(s.opts.LockTTL / 3)
	defer tick.Stop()
	ttl := fmt.Sprint(s.opts.LockTTL.Milliseconds())
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		var n int64
		err := s.call(context.Background(), "refresh lock", name, func(ctx context.Context) error {
			var err error
			n, err = extendScript.Exec(ctx, s.client, []string{key}, []string{h.token, ttl}).AsInt64()
			return err
		})
		switch {
		case err != nil:
			s.log.Warn("a certificate lock could not be refreshed: it expires unless the next try works", "lock", name, "err", err)
		case n != 1:
			s.log.Warn("a certificate lock was lost (it expired): another node may take the same work", "lock", name)
			return
		}
	}
}

// Unlock implements certmagic.Locker: it stops the refresh and deletes the lock
// if it still holds this storage's token (a compare-and-delete script), so
// that a lock that expired and went to another holder is left to it: then
// ErrLockLost.
func (s *Valkey) Unlock(ctx context.Context, name string) error {
	s.mu.Lock()
	h := s.held[name]
	delete(s.held, name)
	s.mu.Unlock()
	if h == nil {
		return fmt.Errorf("acmestore: unlock %q: not held here", name)
	}
	close(h.stop)
	<-h.done
	return s.release(ctx, name, s.locks+name, h.token)
}

func (s *Valkey) release(ctx context.Context, name, key, token string) error {
	var n int64
	err := s.call(ctx, "unlock", name, func(ctx context.Context) error {
		var err error
		n, err = releaseScript.Exec(ctx, s.client, []string{key}, []string{token}).AsInt64()
		return err
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("%w: %q expired before it was unlocked", ErrLockLost, name)
	}
	return err
}

// Close stops refreshing the locks this storage holds, without freeing them:
// they expire after Options.LockTTL, as those of a node that died. Later Locks
// fail. It does not close the client. Idempotent.
func (s *Valkey) Close() {
	s.mu.Lock()
	s.closed = true
	held := s.held
	s.held = map[string]*heldLock{}
	s.mu.Unlock()
	for _, h := range held {
		close(h.stop)
		<-h.done
	}
}

package acmestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/reapergw/reaper/internal/redistest"
)

func startRedis(t *testing.T) *redistest.Server {
	t.Helper()
	return redistest.Start(t, redistest.Options{})
}

var prefixes atomic.Int64

// freshPrefix gives every test its own keys on the shared server.
func freshPrefix() string { return fmt.Sprintf("test%d:acme/", prefixes.Add(1)) }

func newClient(t *testing.T, srv *redistest.Server) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newValkey is a storage with its own client (as a node has), closed in
// t.Cleanup.
func newValkey(t *testing.T, srv *redistest.Server, prefix string, opts Options) *Valkey {
	t.Helper()
	opts.Client, opts.Prefix = newClient(t, srv), prefix
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestValkey_EveryKeyUnderThePrefix(t *testing.T) {
	srv := startRedis(t)
	prefix := freshPrefix()
	s := newValkey(t, srv, prefix, Options{})
	store(t, s, tree...)
	if err := s.Lock(t.Context(), "issue_cert_a.test"); err != nil {
		t.Fatal(err)
	}
	defer s.Unlock(context.Background(), "issue_cert_a.test")
	c := newClient(t, srv)
	keys, err := c.Do(t.Context(), c.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(tree)/2+2 { // the files, the index, the lock
		t.Errorf("%d keys on the server, want %d: %q", len(keys), len(tree)/2+2, keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			t.Errorf("key %q is not under the prefix %q", k, prefix)
		}
	}
}

func TestValkey_RefreshKeepsALockPastItsTTL(t *testing.T) {
	srv := startRedis(t)
	prefix := freshPrefix()
	opts := Options{LockTTL: 300 * time.Millisecond, LockPoll: 50 * time.Millisecond}
	a, b := newValkey(t, srv, prefix, opts), newValkey(t, srv, prefix, opts)
	if err := a.Lock(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	// b tries every 50 ms for four ttls: the refreshed lock never expires.
	ctx, cancel := context.WithTimeout(t.Context(), 4*opts.LockTTL)
	defer cancel()
	if err := b.Lock(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a lock held and refreshed for four ttls: %v, want a wait until the deadline", err)
	}
	if err := a.Unlock(t.Context(), "x"); err != nil {
		t.Errorf("Unlock by the holder after four ttls: %v", err)
	}
}

func TestValkey_ALockExpiresWhenItsHolderStops(t *testing.T) {
	srv := startRedis(t)
	prefix := freshPrefix()
	opts := Options{LockTTL: 300 * time.Millisecond, LockPoll: 50 * time.Millisecond}
	a, b := newValkey(t, srv, prefix, opts), newValkey(t, srv, prefix, opts)
	if err := a.Lock(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	a.Close() // as a node that dies: no refresh, no unlock
	c := newClient(t, srv)
	if ms, err := c.Do(t.Context(), c.B().Pttl().Key(prefix+"locks/x").Build()).AsInt64(); err != nil || ms <= 0 || ms > 300 {
		t.Fatalf("the stopped holder's lock has a ttl of %d ms (%v), want (0, 300]", ms, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := b.Lock(ctx, "x"); err != nil {
		t.Fatalf("Lock after the holder stopped: %v, want the lock once it expired", err)
	}
	if err := a.Lock(t.Context(), "y"); err == nil {
		t.Error("Lock on a closed storage succeeded")
	}
	if err := b.Unlock(t.Context(), "x"); err != nil {
		t.Error(err)
	}
}

func TestValkey_UnlockOfALostLockLeavesTheNewHolders(t *testing.T) {
	srv := startRedis(t)
	prefix := freshPrefix()
	opts := Options{LockTTL: 300 * time.Millisecond, LockPoll: 50 * time.Millisecond}
	a, b := newValkey(t, srv, prefix, opts), newValkey(t, srv, prefix, opts)
	if err := a.Lock(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv)
	// The lock expires under a (a pause longer than its ttl), and b takes it.
	if err := c.Do(t.Context(), c.B().Del().Key(prefix+"locks/x").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(t.Context(), "x"); !errors.Is(err, ErrLockLost) {
		t.Errorf("Unlock of a lock that went to another holder: %v, want ErrLockLost", err)
	}
	if n, _ := c.Do(t.Context(), c.B().Exists().Key(prefix+"locks/x").Build()).AsInt64(); n != 1 {
		t.Error("the old holder's Unlock deleted the new holder's lock")
	}
	if err := b.Unlock(t.Context(), "x"); err != nil {
		t.Errorf("Unlock by the new holder: %v", err)
	}
	if err := b.Unlock(t.Context(), "x"); err == nil {
		t.Error("a second Unlock succeeded")
	}
}

func TestValkey_ErrorsNameTheKeyNotTheValue(t *testing.T) {
	srv := startRedis(t)
	s := newValkey(t, srv, freshPrefix(), Options{})
	srv.Stop()
	err := s.Store(t.Context(), "certificates/x/a.test.key", []byte("-----BEGIN PRIVATE KEY----- s3cret"))
	if err == nil {
		t.Fatal("Store with the server stopped succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, `store "certificates/x/a.test.key"`) || strings.Contains(msg, "s3cret") {
		t.Errorf("error %q: want the operation and the key, never the value", msg)
	}
}

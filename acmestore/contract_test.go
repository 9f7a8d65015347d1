package acmestore

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
)

// The contract of certmagic.Storage as certmagic's FileStorage keeps it (keys
// are paths; "a" is a prefix of "a/b" but not of "ab/c"), run against
// FileStorage itself and against Valkey: newPair returns two storages on the
// same backend, as two nodes have.

type newPair func(t *testing.T) (a, b certmagic.Storage)

func runContract(t *testing.T, pair newPair) {
	t.Run("MissingKeys", func(t *testing.T) { testMissingKeys(t, pair) })
	t.Run("StoreLoadOverwrite", func(t *testing.T) { testStoreLoad(t, pair) })
	t.Run("Stat", func(t *testing.T) { testStat(t, pair) })
	t.Run("ListAndExists", func(t *testing.T) { testList(t, pair) })
	t.Run("DeleteDirectory", func(t *testing.T) { testDelete(t, pair) })
	t.Run("LockIsExclusive", func(t *testing.T) { testLockExclusive(t, pair) })
	t.Run("LockUnderContention", func(t *testing.T) { testLockContention(t, pair) })
}

func TestContract_FileStorage(t *testing.T) {
	runContract(t, func(t *testing.T) (certmagic.Storage, certmagic.Storage) {
		dir := t.TempDir()
		return &certmagic.FileStorage{Path: dir}, &certmagic.FileStorage{Path: dir}
	})
}

func TestContract_Valkey(t *testing.T) {
	srv := startRedis(t)
	runContract(t, func(t *testing.T) (certmagic.Storage, certmagic.Storage) {
		prefix := freshPrefix()
		return newValkey(t, srv, prefix, Options{}), newValkey(t, srv, prefix, Options{})
	})
}

func store(t *testing.T, s certmagic.Storage, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		if err := s.Store(t.Context(), kv[i], []byte(kv[i+1])); err != nil {
			t.Fatalf("Store(%q): %v", kv[i], err)
		}
	}
}

func testMissingKeys(t *testing.T, pair newPair) {
	s, _ := pair(t)
	ctx := t.Context()
	if _, err := s.Load(ctx, "no/such.key"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing key: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.Stat(ctx, "no/such.key"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing key: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.List(ctx, "no", false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List of a missing prefix: %v, want fs.ErrNotExist", err)
	}
	if s.Exists(ctx, "no/such.key") {
		t.Error("Exists of a missing key is true")
	}
	if err := s.Delete(ctx, "no/such.key"); err != nil {
		t.Errorf("Delete of a missing key: %v, want nil", err)
	}
}

func testStoreLoad(t *testing.T, pair newPair) {
	a, b := pair(t)
	store(t, a, "acme/users/x/key.pem", "secret one")
	if got, err := b.Load(t.Context(), "acme/users/x/key.pem"); err != nil || string(got) != "secret one" {
		t.Errorf("Load from the other node = %q, %v", got, err)
	}
	store(t, b, "acme/users/x/key.pem", "two")
	if got, err := a.Load(t.Context(), "acme/users/x/key.pem"); err != nil || string(got) != "two" {
		t.Errorf("Load after an overwrite = %q, %v; want two", got, err)
	}
}

func testStat(t *testing.T, pair newPair) {
	s, _ := pair(t)
	before := time.Now().Add(-2 * time.Second) // file systems round times
	store(t, s, "certs/a.test/a.test.crt", "12345")
	after := time.Now().Add(2 * time.Second)
	fi, err := s.Stat(t.Context(), "certs/a.test/a.test.crt")
	if err != nil || !fi.IsTerminal || fi.Size != 5 || fi.Key != "certs/a.test/a.test.crt" ||
		fi.Modified.Before(before) || fi.Modified.After(after) {
		t.Errorf("Stat of a file = %+v, %v; want terminal, size 5, modified now", fi, err)
	}
	di, err := s.Stat(t.Context(), "certs/a.test")
	if err != nil || di.IsTerminal || di.Key != "certs/a.test" {
		t.Errorf("Stat of a directory = %+v, %v; want not terminal", di, err)
	}
}

// tree is a storage's content for the list and delete tests: "certificates/ca"
// is a prefix of "certificates/cab" by characters but not by components.
var tree = []string{
	"certificates/ca/a.test/a.test.crt", "A",
	"certificates/ca/a.test/a.test.key", "K",
	"certificates/ca/b.test/b.test.crt", "B",
	"certificates/cab/x.json", "X",
	"ocsp/a.test-1", "O",
}

func listed(t *testing.T, s certmagic.Storage, prefix string, recursive bool) []string {
	t.Helper()
	keys, err := s.List(t.Context(), prefix, recursive)
	if err != nil {
		t.Fatalf("List(%q, %v): %v", prefix, recursive, err)
	}
	slices.Sort(keys)
	return keys
}

func testList(t *testing.T, pair newPair) {
	s, _ := pair(t)
	store(t, s, tree...)
	for _, c := range []struct {
		prefix    string
		recursive bool
		want      []string
	}{
		{"certificates", false, []string{"certificates/ca", "certificates/cab"}},
		{"certificates/ca", false, []string{"certificates/ca/a.test", "certificates/ca/b.test"}},
		{"certificates/ca", true, []string{"certificates/ca/a.test", "certificates/ca/a.test/a.test.crt",
			"certificates/ca/a.test/a.test.key", "certificates/ca/b.test", "certificates/ca/b.test/b.test.crt"}},
		{"certificates/ca/a.test/a.test.crt", false, nil}, // a file has nothing below it
	} {
		if got := listed(t, s, c.prefix, c.recursive); !slices.Equal(got, c.want) {
			t.Errorf("List(%q, recursive %v) = %q, want %q", c.prefix, c.recursive, got, c.want)
		}
	}
	for key, want := range map[string]bool{"certificates": true, "certificates/ca": true, "certificates/c": false,
		"certificates/ca/a.test/a.test.crt": true, "ocsp/a.test": false} {
		if got := s.Exists(t.Context(), key); got != want {
			t.Errorf("Exists(%q) = %v, want %v", key, got, want)
		}
	}
}

func testDelete(t *testing.T, pair newPair) {
	a, b := pair(t)
	store(t, a, tree...)
	if err := b.Delete(t.Context(), "certificates/ca"); err != nil {
		t.Fatal(err)
	}
	if a.Exists(t.Context(), "certificates/ca") || a.Exists(t.Context(), "certificates/ca/a.test/a.test.key") {
		t.Error("the directory or a file in it exists after Delete")
	}
	if got := listed(t, a, "certificates", false); !slices.Equal(got, []string{"certificates/cab"}) {
		t.Errorf("after deleting certificates/ca, List(certificates) = %q, want only certificates/cab", got)
	}
	if got, err := a.Load(t.Context(), "ocsp/a.test-1"); err != nil || string(got) != "O" {
		t.Errorf("an unrelated key after Delete: %q, %v", got, err)
	}
}

func testLockExclusive(t *testing.T, pair newPair) {
	a, b := pair(t)
	if err := a.Lock(t.Context(), "issue_cert_a.test"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	err := b.Lock(ctx, "issue_cert_a.test")
	cancel()
	if err == nil {
		t.Fatal("a second Lock of a held lock succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a Lock that waited past its context: %v, want context.DeadlineExceeded", err)
	}
	if err := b.Lock(t.Context(), "issue_cert_b.test"); err != nil {
		t.Errorf("another name is not locked: %v", err)
	} else if err := b.Unlock(t.Context(), "issue_cert_b.test"); err != nil {
		t.Error(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(t.Context(), "issue_cert_a.test") }()
	if err := a.Unlock(t.Context(), "issue_cert_a.test"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Lock once the holder unlocked: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lock still waits 10s after the holder unlocked")
	}
	if err := b.Unlock(t.Context(), "issue_cert_a.test"); err != nil {
		t.Error(err)
	}
}

// testLockContention: two nodes with two goroutines each take one lock in
// turn; never two inside at once.
func testLockContention(t *testing.T, pair newPair) {
	a, b := pair(t)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, s := range []certmagic.Storage{a, a, b, b} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if err := s.Lock(ctx, "acct"); err != nil {
				errs <- err
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(20 * time.Millisecond) // work inside the lock: others must wait
			inside.Add(-1)
			errs <- s.Unlock(context.Background(), "acct")
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d holders inside the lock at once, want 1", m)
	}
}

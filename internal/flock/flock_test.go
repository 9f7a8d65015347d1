//go:build unix

package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Two opens of one file are two holders: the second cannot take an exclusive
// lock while the first holds it, and can once it is let go.
func TestLock_OneExclusiveHolderAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()
	if err := Lock(a, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := Lock(b, unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("second lock while the first holds it: %v, want EWOULDBLOCK", err)
	}
	if err := Lock(a, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := Lock(b, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("second lock once the first let go: %v", err)
	}
}

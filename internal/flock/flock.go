//go:build unix

// Package flock takes flock(2) locks on open files: the kernel drops them with
// their holder however it exits, so a crashed process never leaves one behind.
package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Lock applies how (unix.LOCK_EX, LOCK_SH, LOCK_UN, with LOCK_NB) to f, again
// while a signal interrupts it (EINTR). A lock held elsewhere with LOCK_NB is
// unix.EWOULDBLOCK.
func Lock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

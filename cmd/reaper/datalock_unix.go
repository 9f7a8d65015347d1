//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/reapergw/reaper/internal/flock"
)

// dataLockName is the file in node.data_dir that one running node holds an
// exclusive flock on, with its pid in it. The kernel drops the lock when its holder
// exits however it exits (a SIGKILL too), so a crashed node never blocks its
// restart; the pid in the file is only for the message of the node refused.
const dataLockName = "reaper.lock"

// errDataDirInUse: another reaper node runs on this data directory.
var errDataDirInUse = errors.New("another reaper node runs on this data directory")

// lockDataDir takes the data directory for this process: one node decides, and
// writes state.json, per directory. Two nodes on one directory would both decide
// (two starts of one app, two stops) and overwrite each other's state. The lock is
// held until the returned function runs (at shutdown) or the process ends; the
// file is close-on-exec, so apps never inherit it.
func lockDataDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, dataLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node.data_dir: %w", err)
	}
	if err := flock.Lock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := readLockPID(f)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("node.data_dir: %s: %w (%s holds %s); stop it first, or give this node its own data_dir",
				filepath.Clean(dir), errDataDirInUse, holder, dataLockName)
		}
		return nil, fmt.Errorf("node.data_dir: lock %s: %w", path, err)
	}
	// The pid of the holder, for the message of the next node refused.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { _ = f.Close() }, nil
}

// readLockPID names the holder of the lock file f from the pid it wrote.
func readLockPID(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil && pid > 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "a process"
}

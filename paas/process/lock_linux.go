package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/reapergw/reaper/internal/flock"
)

// lockName is the file under <data_dir>/process that tells a running driver: each
// driver holds a shared flock on it while it is open, and StopApps an exclusive
// one. The kernel drops a flock when its holder exits, so a crash leaves no stale
// lock; descriptors are close-on-exec, so apps never inherit it.
const lockName = "driver.lock"

// ErrStopping: StopApps is stopping the apps of this data directory.
var ErrStopping = errors.New("process: reaper stop-apps is stopping the apps of this data directory; start reaper once it is done")

func openLock(pidDir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(pidDir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
}

// lockShared takes the shared lock of a driver on pidDir; it fails with ErrStopping
// rather than wait while StopApps holds the exclusive one.
func lockShared(pidDir string) (*os.File, error) {
	f, err := openLock(pidDir)
	if err != nil {
		return nil, fmt.Errorf("process: data directory: %w", err)
	}
	if err := flock.Lock(f, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrStopping
		}
		return nil, fmt.Errorf("process: lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// lockExclusive takes the lock of StopApps on pidDir. held is true, with a nil
// file, when a driver holds it: a reaper node runs on this data directory.
func lockExclusive(pidDir string) (f *os.File, held bool, err error) {
	f, err = openLock(pidDir)
	if err != nil {
		return nil, false, err
	}
	if err := flock.Lock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, err
	}
	return f, false, nil
}

// lockHolders returns the pids that hold a flock on the lock file of pidDir, from
// /proc/locks (for messages: empty when they cannot be told).
func lockHolders(pidDir string) []int {
	fi, err := os.Stat(filepath.Join(pidDir, lockName))
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(pids) < 64 {
		// 1: FLOCK  ADVISORY  READ  1234 fd:01:5678 0 EOF   ("->" marks a waiter)
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[1] != "FLOCK" || fs[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

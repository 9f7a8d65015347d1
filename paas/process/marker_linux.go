package process

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reapergw/reaper/paas"
	"golang.org/x/sys/unix"
)

// MarkerEnv is the variable the driver sets in the environment of every app it
// starts: REAPER_APP=<key>/<app id>, where key is derived from the absolute path of
// the data directory (dataDirKey). It is how reaper recognises an app it started
// when the app's pid file is gone (deleted by hand, or with the data directory): a
// group leader run by reaper's user, whose initial environment carries the marker
// of this data directory and this app, and whose command line is the configured
// command. It wins over a REAPER_APP of the app's env.
const MarkerEnv = "REAPER_APP"

const (
	// maxEnviron bounds what is read of a process's initial environment.
	maxEnviron = 1 << 20
	// maxCmdline bounds what is read of a process's command line.
	maxCmdline = 256 << 10
)

// dataDirKey names a data directory in markers: 16 hex digits of the SHA-256 of
// its absolute, cleaned path. The path itself is not used: it may be long, and
// the apps need not learn where reaper keeps its files.
func dataDirKey(dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = filepath.Clean(dataDir)
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:8])
}

func markerValue(key, id string) string { return key + "/" + id }

// marked is a live process group leader run by reaper's user whose initial
// environment carries a marker of one data directory.
type marked struct {
	pid        int
	id         string // the app id of its marker
	startTicks uint64
}

// scanMarked lists the live group leaders that carry a marker of the data
// directory of key. It reads /proc once; processes of other users are skipped
// (their environment cannot be read, and they could not be signalled anyway).
func scanMarked(key string) []marked {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	uid := os.Geteuid()
	var out []marked
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == os.Getpid() {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != pid || !st.alive() || procUID(pid) != uid {
			continue
		}
		v, ok := readMarker(pid)
		if !ok {
			continue
		}
		if id, ok := strings.CutPrefix(v, key+"/"); ok && paas.ValidName(id) {
			out = append(out, marked{pid: pid, id: id, startTicks: st.startTicks})
		}
	}
	return out
}

// procUID returns the real user id of process pid, -1 when it cannot be read.
func procUID(pid int) int {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// readMarker returns the value of MarkerEnv in the initial environment of pid.
func readMarker(pid int) (string, bool) {
	b, err := readBounded("/proc/"+strconv.Itoa(pid)+"/environ", maxEnviron)
	if err != nil {
		return "", false
	}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(MarkerEnv+"=")); ok {
			return string(v), true
		}
	}
	return "", false
}

// readCmdline returns the arguments of pid.
func readCmdline(pid int) ([]string, error) {
	b, err := readBounded("/proc/"+strconv.Itoa(pid)+"/cmdline", maxCmdline)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil, errors.New("empty command line")
	}
	return strings.Split(string(b), "\x00"), nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// proveMarked opens a pidfd on pid and checks that it is the app id of the data
// directory of key that the driver started: a live leader of its own process
// group, run by reaper's user, carrying the marker key/id and, when command is not
// nil, running exactly command. The checks read /proc after the pidfd is opened,
// and the pidfd is checked to be still running after them, so that they cannot be
// about another process that took the pid in between. It returns the pidfd and
// what a pid file would hold, or why the process is not proven.
func proveMarked(pid int, key, id string, command []string) (*os.File, pidRecord, string) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, pidRecord{}, "the process is gone"
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rec, why := checkMarked(pid, key, id, command)
	if why == "" && exited(f) {
		why = "the process is gone"
	}
	if why != "" {
		_ = f.Close()
		return nil, pidRecord{}, why
	}
	return f, rec, ""
}

func checkMarked(pid int, key, id string, command []string) (pidRecord, string) {
	st, err := readStat(pid)
	switch {
	case err != nil || !st.alive():
		return pidRecord{}, "the process is gone"
	case st.pgrp != pid:
		return pidRecord{}, "it does not lead its own process group"
	case procUID(pid) != os.Geteuid():
		return pidRecord{}, "it runs as another user"
	}
	if v, ok := readMarker(pid); !ok || v != markerValue(key, id) {
		return pidRecord{}, "it does not carry " + MarkerEnv + " for this data directory and app"
	}
	args, err := readCmdline(pid)
	if err != nil {
		return pidRecord{}, "its command line cannot be read"
	}
	if command != nil && !slices.Equal(args, command) {
		// The commands are not given: arguments may hold secrets.
		return pidRecord{}, "it runs another command than the configured one"
	}
	return pidRecord{
		PID: pid, PGID: pid, StartTicks: st.startTicks, Command: args, StartedAt: startTime(st.startTicks),
	}, ""
}

// exited reports whether the process of pidfd f has exited (or f cannot be polled).
// It goes through SyscallConn, not Fd, which would put f in blocking mode and keep
// waitExit from parking in the runtime's poller.
func exited(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	gone := true
	_ = rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			gone = err != nil || n > 0
			return
		}
	})
	return gone
}

// userHZ is the unit of the start times of /proc/<pid>/stat: USER_HZ, 100 on every
// architecture Go supports on Linux.
const userHZ = 100

// startTime converts a start time in clock ticks after boot to a time, using the
// boot time of /proc/stat; it returns now when that cannot be read.
func startTime(ticks uint64) time.Time {
	b, err := readBounded("/proc/stat", 1<<20)
	if err != nil {
		return time.Now()
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / userHZ)
			}
		}
	}
	return time.Now()
}

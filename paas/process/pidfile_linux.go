package process

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// pidRecord is the content of <data_dir>/process/<id>.pid: enough for the next reaper
// to find a running app again and to be sure it is the same process (a pid alone may
// have been reused by another program since).
type pidRecord struct {
	PID        int       `json:"pid"`
	PGID       int       `json:"pgid"`
	StartTicks uint64    `json:"start_ticks"` // field 22 of /proc/<pid>/stat
	Command    []string  `json:"command"`
	StartedAt  time.Time `json:"started_at"`
}

const (
	pidSuffix = ".pid"
	// tmpPrefix marks pid files being written; New removes leftovers of a crash.
	tmpPrefix = ".tmp-"
	// maxPidFile bounds what New reads from a pid file.
	maxPidFile = 64 << 10
)

func pidPath(dir, id string) string { return filepath.Join(dir, id+pidSuffix) }

// writePidFile writes rec atomically: a reader sees the old file or the new one,
// never half of one.
func writePidFile(dir, id string, rec pidRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, tmpPrefix+id+"-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), pidPath(dir, id))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

func readPidFile(path string) (pidRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return pidRecord{}, err
	}
	defer f.Close()
	b := make([]byte, maxPidFile+1)
	n, err := f.Read(b)
	if err != nil {
		return pidRecord{}, err
	}
	if n > maxPidFile {
		return pidRecord{}, errors.New("file too large")
	}
	var rec pidRecord
	if err := json.Unmarshal(b[:n], &rec); err != nil {
		return pidRecord{}, err
	}
	if rec.PID <= 1 || rec.PGID <= 1 || rec.StartTicks == 0 || len(rec.Command) == 0 {
		return pidRecord{}, errors.New("incomplete record")
	}
	return rec, nil
}

// procStat is what reaper reads from /proc/<pid>/stat.
type procStat struct {
	state      byte // R, S, D, Z, X, …
	pgrp       int
	startTicks uint64 // clock ticks after boot at which the process started
}

// alive reports whether the process still runs: a zombie has exited and only waits
// for its parent to collect its status.
func (s procStat) alive() bool { return s.state != 'Z' && s.state != 'X' && s.state != 'x' }

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses /proc/<pid>/stat. The command name (field 2) is in parentheses and
// may itself hold spaces and parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("process: malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("process: malformed stat")
	}
	pgrp, err1 := strconv.Atoi(f[5-3])
	ticks, err2 := strconv.ParseUint(f[22-3], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, errors.New("process: malformed stat")
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTicks: ticks}, nil
}

// groupAlive reports whether process group pgid still has a live member. Zombies do
// not count: their parent (init, once reaper's child is gone) may never collect them.
// There is no event for "the last member of a group exited", so callers poll this,
// with a backoff and a deadline, only while a stop or a crash is being cleaned up.
func groupAlive(pgid int) bool {
	if err := unix.Kill(-pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: assume the worst, the caller's deadline bounds it
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err == nil && st.pgrp == pgid && st.alive() {
			return true
		}
	}
	return false
}

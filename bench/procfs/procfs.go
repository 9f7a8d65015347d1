// Package procfs reads the few figures the benchmark takes from Linux's /proc: a
// process's CPU time and memory, and the state of the TCP sockets on a port.
// Every function reads the file afresh; none caches. Errors wrap ErrProc.
package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrProc wraps every failure to read or understand a /proc file.
var ErrProc = errors.New("procfs: cannot read /proc")

// userHZ is the unit of the CPU times in /proc/<pid>/stat: the kernel exports them
// in USER_HZ, which is 100 on every Linux architecture Go supports.
const userHZ = 100

// CPUTime returns the CPU time pid has used so far, user plus system, summed over
// all its threads (10 ms resolution).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat line.
func parseStatCPU(b []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces and ')':
	// the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: stat has no command field", ErrProc)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: stat has %d fields after the command", ErrProc, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%w: stat times: %w", ErrProc, err)
	}
	return time.Duration(utime+stime) * (time.Second / userHZ), nil
}

// Memory is what /proc/<pid>/status says of a process's memory and threads.
type Memory struct {
	RSS     int64 // VmRSS, bytes: resident now
	HWM     int64 // VmHWM, bytes: the highest RSS so far
	Threads int
}

// ReadMemory returns pid's resident memory, peak and thread count.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	defer f.Close()
	return parseStatus(f)
}

func parseStatus(r io.Reader) (Memory, error) {
	var m Memory
	seen := 0
	s := bufio.NewScanner(r)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		var err error
		switch key {
		case "VmRSS":
			m.RSS, err = parseKB(value)
		case "VmHWM":
			m.HWM, err = parseKB(value)
		case "Threads":
			m.Threads, err = strconv.Atoi(value)
		default:
			continue
		}
		if err != nil {
			return Memory{}, fmt.Errorf("%w: status %s %q: %w", ErrProc, key, value, err)
		}
		seen++
	}
	if err := s.Err(); err != nil {
		return Memory{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	if seen != 3 {
		return Memory{}, fmt.Errorf("%w: status lacks VmRSS, VmHWM or Threads", ErrProc)
	}
	return m, nil
}

// parseKB reads "1234 kB".
func parseKB(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(s, "kB")), 10, 64)
	return n << 10, err
}

// Cmdline returns the argv of pid.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}

// OpenFiles returns how many file descriptors pid has open.
func OpenFiles(pid int) (int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return len(entries), nil
}

package procfs

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses; utime 250, stime 50 ticks.
	line := "1234 (we ird) (name)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 555 0 0\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", got, err)
	}
	for _, bad := range []string{"1234 no parens", "1 (x) S 1 2", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 50 0"} {
		if _, err := parseStatCPU([]byte(bad)); !errors.Is(err, ErrProc) {
			t.Errorf("parseStatCPU(%q) = %v, want ErrProc", bad, err)
		}
	}
}

func TestParseStatus(t *testing.T) {
	in := "Name:\treaper\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t12\nSigQ:\t0/1\n"
	got, err := parseStatus(strings.NewReader(in))
	want := Memory{RSS: 100 << 20, HWM: 200 << 20, Threads: 12}
	if err != nil || got != want {
		t.Fatalf("parseStatus = %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseStatus(strings.NewReader("Name:\tx\nVmRSS:\t1 kB\n")); !errors.Is(err, ErrProc) {
		t.Errorf("missing fields: err = %v", err)
	}
	if _, err := parseStatus(strings.NewReader("VmRSS:\tlots kB\nVmHWM:\t1 kB\nThreads:\t1\n")); !errors.Is(err, ErrProc) {
		t.Errorf("bad number: err = %v", err)
	}
}

func TestCPUTime_GrowsWhenTheProcessWorks(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		after, err := CPUTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time still %v after 5s of spinning (x=%d)", after, x)
		}
	}
}

func TestReadMemory_OfThisProcess(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS || m.Threads < 1 {
		t.Errorf("memory %+v", m)
	}
	if _, err := ReadMemory(-1); !errors.Is(err, ErrProc) {
		t.Errorf("pid -1: err = %v", err)
	}
}

func TestCmdlineAndOpenFiles_OfThisProcess(t *testing.T) {
	argv, err := Cmdline(os.Getpid())
	if err != nil || len(argv) != len(os.Args) || argv[0] != os.Args[0] {
		t.Errorf("Cmdline = %q, %v; want %q", argv, err, os.Args)
	}
	n, err := OpenFiles(os.Getpid())
	if err != nil || n < 3 {
		t.Errorf("OpenFiles = %d, %v", n, err)
	}
}

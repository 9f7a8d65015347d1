package chrometest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// fatalRecorder records Fatalf and Skipf and ends the goroutine like the testing package does.
type fatalRecorder struct {
	testing.TB
	msg     string
	skipped bool
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Skipf(format string, args ...any) {
	f.msg, f.skipped = fmt.Sprintf(format, args...), true
	runtime.Goexit()
}

func TestStart_MissingChromiumSkipsOrFails(t *testing.T) {
	t.Setenv("REAPER_CHROMIUM", filepath.Join(t.TempDir(), "no-chromium"))
	for _, require := range []string{"", "1"} {
		t.Setenv(RequireEnv, require)
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Start(rec)
			rec.msg = "Start returned"
		}()
		<-done
		wantSkip := require == ""
		if rec.skipped != wantSkip || !strings.Contains(rec.msg, "chromium not found") {
			t.Errorf("%s=%q: skipped=%v msg=%q, want skipped=%v and a message naming the missing binary", RequireEnv, require, rec.skipped, rec.msg, wantSkip)
		}
		if wantSkip && !strings.Contains(rec.msg, "apt-get install chromium") {
			t.Errorf("skip message %q does not say how to install chromium", rec.msg)
		}
	}
}

func TestStart_CleanupStopsEveryProcess(t *testing.T) {
	var b *Browser
	t.Run("browser", func(t *testing.T) {
		b = Start(t)
		p := b.NewPage(t)
		if _, err := p.Eval(`1`); err != nil {
			t.Fatal(err)
		}
	})
	if b == nil {
		t.Skip("no browser")
	}
	select {
	case <-b.exited:
	default:
		t.Fatal("browser process still running after cleanup")
	}
	// Killed processes may linger as zombies until init reaps them: only live ones count.
	pgid := b.cmd.Process.Pid
	var live []int
	if !testwait.Until(5*time.Second, func() bool {
		var err error
		if live, err = liveInGroup(pgid); err != nil {
			t.Skipf("cannot list processes: %v", err)
		}
		return len(live) == 0
	}) {
		t.Fatalf("processes of the browser's group still alive after cleanup: %v", live)
	}
	if err := b.Call("Browser.getVersion", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after cleanup = %v, want ErrClosed", err)
	}
}

func TestOutputWatcher_FindsURLAcrossWrites(t *testing.T) {
	o := &outputWatcher{url: make(chan string, 1)}
	for _, chunk := range []string{"noise\n\nDev", "Tools listening on ws://127.0.0.1:4", "5/devtools/browser/x\nmore\n"} {
		if _, err := o.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case u := <-o.url:
		if u != "ws://127.0.0.1:45/devtools/browser/x" {
			t.Errorf("url = %q", u)
		}
	default:
		t.Fatal("url not found")
	}
	_, _ = o.Write(bytes.Repeat([]byte("x"), 3*stderrTail))
	if n := len(o.tail()); n != stderrTail {
		t.Errorf("tail length = %d, want %d", n, stderrTail)
	}
}

// liveInGroup lists the processes of group pgid that are not zombies, from /proc.
func liveInGroup(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its closing parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			live = append(live, pid)
		}
	}
	return live, nil
}

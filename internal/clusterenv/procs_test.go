package clusterenv

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

func TestCleanups_RunLastFirstAndOnce(t *testing.T) {
	var cl Cleanups
	var got []string
	cl.Push(func() { got = append(got, "a") })
	cl.Push(func() {
		got = append(got, "b")
		cl.Push(func() { got = append(got, "pushed while running") })
	})
	cl.Run()
	cl.Run()
	if strings.Join(got, ",") != "b,pushed while running,a" {
		t.Errorf("ran %v", got)
	}
}

func TestLogWatch_CountsAccessLinesAndFindsOthers(t *testing.T) {
	w := NewLogWatch()
	pr, pw := io.Pipe()
	go w.ReadLines(pr)
	found := make(chan string, 1)
	go func() {
		l, err := w.WaitFor(context.Background(), 5*time.Second, func(s string) bool { return strings.Contains(s, `"gateway listening"`) })
		if err != nil {
			l = err.Error()
		}
		found <- l
	}()
	lines := []string{
		`{"level":"INFO","msg":"access","status":200}`,
		`{"level":"INFO","msg":"gateway listening","addr":"127.0.0.1:4242"}`,
		`{"level":"INFO","msg":"app woken","app":"a"}`,
		`{"level":"INFO","msg":"app woken","app":"b"}`,
		`{"level":"WARN","msg":"something odd"}`,
		`{"level":"INFO","msg":"access","status":502}`,
		`not json at all`,
		strings.Repeat("x", 200<<10), // longer than the reader's buffer
		`{"level":"ERROR","msg":"after the long line"}`,
	}
	io.WriteString(pw, strings.Join(lines, "\n")+"\n")
	pw.Close()
	if l := <-found; !strings.Contains(l, "127.0.0.1:4242") {
		t.Fatalf("waitFor = %q", l)
	}
	if _, err := w.WaitFor(context.Background(), 5*time.Second, func(s string) bool { return strings.Contains(s, "after the long line") }); err != nil {
		t.Fatalf("the line after an over-long one: %v", err)
	}
	if w.AccessLines() != 2 {
		t.Errorf("access lines %d, want 2", w.AccessLines())
	}
	if w.CountMsg("app woken", "") != 2 || w.CountMsg("app woken", "b") != 1 {
		t.Errorf("app woken: %d, for b %d", w.CountMsg("app woken", ""), w.CountMsg("app woken", "b"))
	}
	if p := w.Problems(); len(p) != 2 || !strings.Contains(p[0], "something odd") {
		t.Errorf("problems %q", p)
	}
	for _, l := range w.Snapshot() {
		if strings.Contains(l, `"access"`) {
			t.Errorf("an access line was kept: %s", l)
		}
	}
	// The writer has finished: waiting for a line that never came fails at once.
	if _, err := w.WaitFor(context.Background(), time.Hour, func(string) bool { return false }); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("waitFor after the end = %v", err)
	}
}

func TestLogWatch_WaitForEndsWithContextAndTimeout(t *testing.T) {
	w := NewLogWatch()
	if _, err := w.WaitFor(context.Background(), 20*time.Millisecond, func(string) bool { return true }); err == nil || !strings.Contains(err.Error(), "not within") {
		t.Errorf("timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.WaitFor(ctx, time.Hour, func(string) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestStartProcess_StopKillsTheWholeGroup starts a shell that starts a child of
// its own, the way reaper's apps would be if they shared its group, and checks
// that stop ends both, even though the shell ignores SIGTERM.
func TestStartProcess_StopKillsTheWholeGroup(t *testing.T) {
	var cl Cleanups
	defer cl.Run()
	p, err := StartProcess(&cl, "shell", []string{"/bin/sh", "-c", `trap "" TERM; sleep 60 & echo "child $!"; wait`}, nil, filepath.Join(t.TempDir(), "shell.log"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.WaitRegexp(context.Background(), regexp.MustCompile(`^child (\d+)$`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(m)
	if !alive(child) {
		t.Fatalf("child %d not running", child)
	}
	p.Grace = 300 * time.Millisecond
	start := time.Now()
	cl.Run() // the stop pushed by StartProcess
	if !p.Exited() {
		t.Fatal("the shell still runs after stop")
	}
	// sleep got SIGTERM with the group and died of it; the shell ignored it and
	// needed the SIGKILL after the grace.
	testwait.For(t, 5*time.Second, "the child "+strconv.Itoa(child)+" to be gone", func() bool { return !alive(child) })
	if took := time.Since(start); took < p.Grace {
		t.Errorf("stop took %v: the shell ignores SIGTERM, so it needed SIGKILL after %v", took, p.Grace)
	}
	if err := p.Failure("test"); !errors.Is(err, ErrProcess) || !strings.Contains(err.Error(), "exited") {
		t.Errorf("failure = %v", err)
	}
}

func TestTailReader_FollowsTheFileUntilTheWriterIsDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	done := make(chan struct{})
	w := NewLogWatch()
	finished := make(chan struct{})
	go func() {
		w.ReadLines(&tailReader{f: in, done: done})
		close(finished)
	}()
	io.WriteString(out, `{"msg":"first"}`+"\n"+`{"msg":"sec`)
	if _, err := w.WaitFor(context.Background(), 5*time.Second, func(s string) bool { return strings.Contains(s, "first") }); err != nil {
		t.Fatal(err)
	}
	// The half-written line is completed later, then the writer ends with one
	// more line that the reader has not seen yet.
	io.WriteString(out, `ond"}`+"\n"+`{"msg":"last"}`+"\n")
	close(done)
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the reader did not end after done closed")
	}
	if got := w.Snapshot(); len(got) != 3 || got[1] != `{"msg":"second"}` || got[2] != `{"msg":"last"}` {
		t.Errorf("lines %q", got)
	}
}

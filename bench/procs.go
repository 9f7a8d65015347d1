package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/reapergw/reaper/bench/procfs"
)

// Processes: every process the bench starts runs in its own process group (so a
// Ctrl-C on the terminal reaches the bench alone, which then stops them in order)
// and dies with the bench if the bench is killed (Pdeathsig). Apps that reaper
// starts are reaper's children and, by design, outlive it: the bench kills them
// itself after stopping reaper (see killApps).

// errProcess reports a child process that failed or did not say what was awaited.
var errProcess = errors.New("bench: child process")

// stopGrace is how long a stopped process may take to exit before SIGKILL.
const stopGrace = 5 * time.Second

// cleanups is a stack of functions run in reverse order, once, at the end of the
// bench whatever happens (error, panic of the main goroutine, Ctrl-C).
type cleanups struct {
	mu  sync.Mutex
	fns []func()
}

func (c *cleanups) push(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, f)
}

// run runs every function pushed so far, last first, and forgets them.
func (c *cleanups) run() {
	for {
		c.mu.Lock()
		if len(c.fns) == 0 {
			c.mu.Unlock()
			return
		}
		f := c.fns[len(c.fns)-1]
		c.fns = c.fns[:len(c.fns)-1]
		c.mu.Unlock()
		f()
	}
}

// process is one child process and what it writes to stdout and stderr.
type process struct {
	name  string
	grace time.Duration // how long stop waits after SIGTERM
	cmd   *exec.Cmd
	log   *logWatch
	done  chan struct{} // closed once the process has exited
	err   error         // from Wait, set before done closes
}

// startProcess starts argv with its stdout and stderr appended to the file
// logPath, which a goroutine reads into a logWatch as it grows, and pushes its
// stop onto cl. env, when not nil, replaces the environment.
//
// A file rather than a pipe: reaper writes an access line per request, and a pipe
// would wake the bench (which is also the load generator) on every one of them,
// a cost on the critical path that a bare proxy, which logs nothing, does not
// cause. With a file, reaper pays for its own write and the bench reads the lines
// in batches.
func startProcess(cl *cleanups, name string, argv, env []string, logPath string) (*process, error) {
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errProcess, name, err)
	}
	defer out.Close() // the child has its own descriptor once started
	in, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errProcess, name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		in.Close()
		return nil, fmt.Errorf("%w: starting %s: %w", errProcess, name, err)
	}
	p := &process{name: name, grace: stopGrace, cmd: cmd, log: newLogWatch(), done: make(chan struct{})}
	go func() {
		p.log.readFrom(&tailReader{f: in, done: p.done})
		in.Close()
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	cl.push(p.stop)
	return p, nil
}

// tailInterval is how often a tailReader looks for new lines.
const tailInterval = 20 * time.Millisecond

// tailReader reads a file that another process is writing: at its end, it waits
// for more until done closes, then reads what is left and ends.
type tailReader struct {
	f     *os.File
	done  <-chan struct{}
	final bool // done has closed: the next end of file is the end
}

func (t *tailReader) Read(p []byte) (int, error) {
	for {
		n, err := t.f.Read(p)
		if n > 0 {
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if t.final {
			return 0, io.EOF
		}
		select {
		case <-t.done:
			t.final = true
		case <-time.After(tailInterval):
		}
	}
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after p.grace, and
// waits for the exit. Safe to call more than once.
func (p *process) stop() {
	if p.exited() {
		return
	}
	pgid := p.pid() // Setpgid: the group id is the leader's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

// failure describes an exit or silence of the process, with the end of its log.
func (p *process) failure(what string) error {
	state := "still running"
	if p.exited() {
		state = fmt.Sprintf("exited: %v", p.err)
	}
	return fmt.Errorf("%w: %s %s (%s); its last log lines:\n%s", errProcess, p.name, what, state, p.log.tail(20))
}

// killApps kills the apps a reaper started (and left running when it stopped, as
// it is meant to): the pids of its process driver's pid files under dataDir,
// provided the process still runs one of programs (a pid may have been reused
// since).
func killApps(dataDir string, programs ...string) {
	files, _ := filepath.Glob(filepath.Join(dataDir, "process", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec struct {
			PID  int `json:"pid"`
			PGID int `json:"pgid"`
		}
		if json.Unmarshal(b, &rec) != nil || rec.PID <= 0 {
			continue
		}
		argv, err := procfs.Cmdline(rec.PID)
		if err != nil || len(argv) == 0 || !slices.Contains(programs, argv[0]) {
			continue
		}
		target := rec.PID
		if rec.PGID > 0 {
			target = -rec.PGID // the app's whole group, as reaper stops it
		}
		_ = syscall.Kill(target, syscall.SIGKILL)
	}
}

// logWatch keeps what a process writes, line by line, and lets the bench wait for
// a line. Reaper's access lines (one per request) are counted, not kept; the other
// lines are kept up to maxKeptLines.
type logWatch struct {
	mu      sync.Mutex
	lines   []string
	dropped int
	access  int64
	changed chan struct{} // closed and replaced when a line is kept
	closed  bool          // the writer has finished
}

const maxKeptLines = 20000

// accessMarker identifies reaper's JSON access lines.
var accessMarker = []byte(`"msg":"access"`)

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

// readFrom reads r to its end. Lines too long for the buffer are cut, never
// blocking the writer.
func (w *logWatch) readFrom(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			w.add(bytes.TrimRight(line, "\r\n"))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// The rest of an over-long line: read it and drop it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	w.mu.Lock()
	w.closed = true
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

func (w *logWatch) add(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(line, accessMarker) {
		w.access++
		return
	}
	if len(w.lines) >= maxKeptLines {
		w.dropped++
		return
	}
	w.lines = append(w.lines, string(line))
	close(w.changed)
	w.changed = make(chan struct{})
}

// accessLines returns how many access lines were seen.
func (w *logWatch) accessLines() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.access
}

// snapshot returns the kept lines.
func (w *logWatch) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

// tail returns the last n kept lines, one per line.
func (w *logWatch) tail(n int) string {
	lines := w.snapshot()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// waitFor returns the first kept line for which match is true, waiting for it up
// to timeout. It fails when ctx ends, the timeout passes, or the writer finishes
// without such a line.
func (w *logWatch) waitFor(ctx context.Context, timeout time.Duration, match func(string) bool) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		w.mu.Lock()
		lines, changed, closed := w.lines[seen:], w.changed, w.closed
		w.mu.Unlock()
		for _, l := range lines {
			if match(l) {
				return l, nil
			}
		}
		seen += len(lines)
		if closed {
			return "", errors.New("the log ended first")
		}
		select {
		case <-changed:
		case <-deadline.C:
			return "", fmt.Errorf("not within %s", timeout)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// jsonLine is the part of a reaper JSON log line the bench reads.
type jsonLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Addr  string `json:"addr"`
	App   string `json:"app"`
}

func parseJSONLine(line string) (jsonLine, bool) {
	var l jsonLine
	if json.Unmarshal([]byte(line), &l) != nil {
		return jsonLine{}, false
	}
	return l, true
}

// countMsg returns how many kept JSON lines carry msg (and app, when not empty).
func (w *logWatch) countMsg(msg, app string) int {
	n := 0
	for _, line := range w.snapshot() {
		if l, ok := parseJSONLine(line); ok && l.Msg == msg && (app == "" || l.App == app) {
			n++
		}
	}
	return n
}

// problems returns the kept JSON lines at level WARN or ERROR.
func (w *logWatch) problems() []string {
	var out []string
	for _, line := range w.snapshot() {
		if l, ok := parseJSONLine(line); ok && (l.Level == "WARN" || l.Level == "ERROR") {
			out = append(out, line)
		}
	}
	return out
}

// waitMsg waits for a JSON line with the message msg and returns it parsed.
func (p *process) waitMsg(ctx context.Context, msg string, timeout time.Duration) (jsonLine, error) {
	var found jsonLine
	_, err := p.log.waitFor(ctx, timeout, func(line string) bool {
		l, ok := parseJSONLine(line)
		if ok && l.Msg == msg {
			found = l
		}
		return ok && l.Msg == msg
	})
	if err != nil {
		return jsonLine{}, p.failure(fmt.Sprintf("did not log %q: %v", msg, err))
	}
	return found, nil
}

// waitRegexp waits for a line matching re and returns its first submatch.
func (p *process) waitRegexp(ctx context.Context, re *regexp.Regexp, timeout time.Duration) (string, error) {
	line, err := p.log.waitFor(ctx, timeout, re.MatchString)
	if err != nil {
		return "", p.failure(fmt.Sprintf("did not log %q: %v", re, err))
	}
	return re.FindStringSubmatch(line)[1], nil
}

package clusterenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Processes: every process started here runs in its own process group (so a
// Ctrl-C on the terminal reaches the program that started it alone, which then
// stops them in order) and dies with that program if it is killed (Pdeathsig).
// Apps that reaper starts with its process driver are reaper's children and, by
// design, outlive it: whoever started reaper kills them after stopping it.

// ErrProcess reports a child process that failed or did not say what was awaited.
var ErrProcess = errors.New("clusterenv: child process")

// StopGrace is how long a stopped process may take to exit before SIGKILL.
const StopGrace = 5 * time.Second

// Cleanups is a stack of functions run in reverse order, once, at the end of a
// run whatever happens (error, panic of the main goroutine, Ctrl-C).
type Cleanups struct {
	mu  sync.Mutex
	fns []func()
}

// Push adds f on top of the stack.
func (c *Cleanups) Push(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, f)
}

// Run runs every function pushed so far, last first, and forgets them. A
// function may push more; they run too.
func (c *Cleanups) Run() {
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

// Process is one child process and what it writes to stdout and stderr.
type Process struct {
	Name string
	// Grace is how long Stop waits after SIGTERM before SIGKILL.
	Grace time.Duration
	// Log holds what the process wrote, line by line.
	Log  *LogWatch
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // from Wait, set before done closes
}

// StartProcess starts argv with its stdout and stderr appended to the file
// logPath, which a goroutine reads into a LogWatch as it grows, and pushes its
// stop onto cl. env, when not nil, replaces the environment.
//
// A file rather than a pipe: reaper writes an access line per request, and a pipe
// would wake the caller (the bench is also the load generator) on every one of
// them, a cost on the critical path that a bare proxy, which logs nothing, does
// not cause. With a file, reaper pays for its own write and the lines are read in
// batches.
func StartProcess(cl *Cleanups, name string, argv, env []string, logPath string) (*Process, error) {
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrProcess, name, err)
	}
	defer out.Close() // the child has its own descriptor once started
	in, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrProcess, name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		in.Close()
		return nil, fmt.Errorf("%w: starting %s: %w", ErrProcess, name, err)
	}
	p := &Process{Name: name, Grace: StopGrace, cmd: cmd, Log: NewLogWatch(), done: make(chan struct{})}
	go func() {
		p.Log.ReadLines(&tailReader{f: in, done: p.done})
		in.Close()
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	cl.Push(p.Stop)
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

// PID returns the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process itself (not its group): SIGKILL plays a crash,
// SIGTERM a shutdown. It returns an error only when the signal could not be sent.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

// Stop sends SIGTERM to the process group, then SIGKILL after p.Grace, and
// waits for the exit. Safe to call more than once.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	pgid := p.PID() // Setpgid: the group id is the leader's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(p.Grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

// Failure describes an exit or silence of the process, with the end of its log.
func (p *Process) Failure(what string) error {
	state := "still running"
	if p.Exited() {
		state = fmt.Sprintf("exited: %v", p.err)
	}
	return fmt.Errorf("%w: %s %s (%s); its last log lines:\n%s", ErrProcess, p.Name, what, state, p.Log.Tail(20))
}

// WaitMsg waits for a JSON line with the message msg and returns it parsed.
func (p *Process) WaitMsg(ctx context.Context, msg string, timeout time.Duration) (JSONLine, error) {
	var found JSONLine
	_, err := p.Log.WaitFor(ctx, timeout, func(line string) bool {
		l, ok := ParseJSONLine(line)
		if ok && l.Msg == msg {
			found = l
		}
		return ok && l.Msg == msg
	})
	if err != nil {
		return JSONLine{}, p.Failure(fmt.Sprintf("did not log %q: %v", msg, err))
	}
	return found, nil
}

// WaitRegexp waits for a line matching re and returns its first submatch.
func (p *Process) WaitRegexp(ctx context.Context, re *regexp.Regexp, timeout time.Duration) (string, error) {
	line, err := p.Log.WaitFor(ctx, timeout, re.MatchString)
	if err != nil {
		return "", p.Failure(fmt.Sprintf("did not log %q: %v", re, err))
	}
	return re.FindStringSubmatch(line)[1], nil
}

package redistest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one run of redis-server.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for
	out    *tailBuffer

	mu     sync.Mutex
	paused bool
}

func startProcess(path, conf, dir string) (*process, error) {
	cmd := exec.Command(path, conf)
	cmd.Dir = dir
	out := &tailBuffer{max: outputTail}
	cmd.Stdout, cmd.Stderr = out, out
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), out: out}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// kill ends the process at once and waits for it; a paused process dies too.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// terminate asks the process to shut down and waits up to timeout, then kills it.
func (p *process) terminate(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("redis-server did not exit within %v of SIGTERM; killed; output:\n%s", timeout, p.out.String())
	}
}

func (p *process) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		p.paused = true
	}
}

func (p *process) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.paused = false
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int

	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// state says what the process is doing, for a start that timed out: its pid
// and the state and wait channel the kernel gives (/proc; "unknown" elsewhere).
// A redis-server that neither answers nor exits for ReadyTimeout was seen once
// under CI's load, with no output: this is what the next one will tell.
func (p *process) state() string {
	pid := p.cmd.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Sprintf("pid %d: %v", pid, err)
	}
	wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	// stat is "pid (comm) state ...": the state is the field after the comm.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	st := "?"
	if len(f) > 0 {
		st = f[0]
	}
	return fmt.Sprintf("pid %d state %s wchan %q", pid, st, wchan)
}

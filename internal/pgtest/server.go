package pgtest

import (
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StopTimeout bounds a fast shutdown (SIGINT) before the server is killed.
var StopTimeout = 15 * time.Second

// Server is a postgres the test runs itself (not through a driver).
type Server struct {
	t      testing.TB
	Addr   string // 127.0.0.1:port
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{}
	once   sync.Once
}

// Run starts the cluster's postgres on a free loopback port and returns at once,
// before it accepts connections (AwaitQuery waits for that). It is stopped in
// t.Cleanup.
func (c *Cluster) Run() *Server {
	c.t.Helper()
	port := FreePort(c.t)
	argv := c.Command(port)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.root
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("pgtest: start postgres: %v", err)
	}
	s := &Server{t: c.t, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	c.t.Cleanup(s.Stop)
	return s
}

// Stop shuts the server down (fast shutdown: SIGINT) and waits for it, killing
// it after StopTimeout. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(StopTimeout):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.t.Errorf("pgtest: postgres did not stop within %s of SIGINT; output:\n%s", StopTimeout, s.out.String())
		}
	})
}

// Output is the tail of the server's log, for a failure message.
func (s *Server) Output() string { return s.out.String() }

// tail keeps the last 8 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 8<<10 {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-8<<10:]...)
	}
	return len(p), nil
}

func (b *tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

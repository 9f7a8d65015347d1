// Package redistest runs a real redis-server for tests: on a free loopback port, in a
// temporary directory, stopped in t.Cleanup. Debian's Redis 7 speaks the protocol of
// Valkey, so it stands in for the Valkey that a reaper cluster uses.
//
// A server can be stopped, killed, paused and restarted on the same port, with its
// data kept across restarts when Options.Persist is set: that is how tests play a
// datastore that goes away mid-run.
//
// When redis-server is not installed, Start skips the test, or fails it when the
// environment sets REAPER_REQUIRE_REDIS=1 (as CI does). No test touches a server it
// did not start.
package redistest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// Path is where redis-server is looked for first; the REAPER_REDIS_SERVER
// environment variable overrides it, and the PATH is searched when neither exists.
const Path = "/usr/bin/redis-server"

// RequireEnv names the environment variable that turns a missing redis-server from a
// skip into a failure.
const RequireEnv = "REAPER_REQUIRE_REDIS"

// Timeouts of the helper: ReadyTimeout bounds a start (until the server answers
// PING); StopTimeout how long a graceful stop may take before the process is killed.
var (
	ReadyTimeout = 10 * time.Second
	StopTimeout  = 10 * time.Second
)

// outputTail bounds the server output kept for error messages.
const outputTail = 8 << 10

// Options configures a test server.
type Options struct {
	// Password, when set, is required of every client (requirepass). It is written to
	// a config file in the server's directory, not passed on the command line.
	Password string
	// Persist turns on the append-only file (fsync on every write), so data written
	// before Stop, Kill or Restart is there after the restart.
	Persist bool
	// TLS makes the server speak TLS only, with a certificate for 127.0.0.1 that
	// Server.TLSConfig trusts.
	TLS bool
	// AlsoBind are addresses the server listens on besides 127.0.0.1, on the
	// same port. Without a Password, protected mode (on by default) then
	// refuses every client that does not come from loopback, as a server bound
	// to a public address does.
	AlsoBind []string
	// Config lines are appended to the server's configuration file (key-load-delay
	// 500 makes a restart load slowly, answering -LOADING meanwhile).
	Config []string
}

// Server is a redis-server started by Start. Its methods are safe for concurrent use
// and fail the test (t.Fatalf) when the server cannot be controlled, so they must be
// called from the test's goroutine.
type Server struct {
	t    testing.TB
	path string
	opts Options
	dir  string
	conf string
	cert *serverCert // with Options.TLS

	mu   sync.Mutex
	port int
	proc *process // nil while stopped
}

// Start launches a redis-server and blocks until it answers PING (ReadyTimeout at
// most). Without redis-server installed it skips the test (or fails it, when
// REAPER_REQUIRE_REDIS=1). The server is killed in t.Cleanup and its directory
// removed.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	path, err := find(os.Getenv)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redistest: %v, and %s=1", err, RequireEnv)
		}
		t.Skipf("redistest: %v: install it (apt-get install redis-server) or set REAPER_REDIS_SERVER; set %s=1 to fail instead of skipping", err, RequireEnv)
	}
	s := &Server{t: t, path: path, opts: opts, dir: t.TempDir()}
	s.conf = filepath.Join(s.dir, "redis.conf")
	if opts.TLS {
		s.cert = newServerCert(t, s.dir)
	}
	t.Cleanup(s.cleanup)

	// Another process may take the free port between our probe and the server's bind:
	// then try another one, a few times.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		err = s.start(port)
		if err == nil {
			return s
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("redistest: %v", err)
		}
	}
}

// find locates the redis-server binary.
func find(getenv func(string) string) (string, error) {
	if p := getenv("REAPER_REDIS_SERVER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("redis-server not found at %s (REAPER_REDIS_SERVER): %w", p, err)
		}
		return p, nil
	}
	if _, err := os.Stat(Path); err == nil {
		return Path, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server not found at %s nor in PATH", Path)
	}
	return p, nil
}

func freePort() (int, error) {
	addr, err := freeport.Pick()
	if err != nil {
		return 0, err
	}
	_, port, _ := net.SplitHostPort(addr)
	return strconv.Atoi(port)
}

// Addr is the server's host:port, the same across restarts.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Stop shuts the server down gracefully (SIGTERM) and waits for it to exit,
// killing it after StopTimeout. Clients see their connections close. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.resume() // a paused server cannot handle SIGTERM
	if err := s.proc.terminate(StopTimeout); err != nil {
		s.t.Errorf("redistest: stop: %v", err)
	}
	s.proc = nil
}

// Kill ends the server at once (SIGKILL), like a crash, and waits for it. With
// Persist, every write it acknowledged is still on disk.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
}

// Restart stops the server if it runs, then starts it again on the same port and
// directory, and blocks until it answers PING. With Persist, the data comes back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.mu.Lock()
	port := s.port
	s.mu.Unlock()
	if err := s.start(port); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// Relaunch stops the server if it runs, then starts it again on the same port and
// directory, and returns as soon as the process runs: before it answers, so that
// a test sees it open its port and load its data.
func (s *Server) Relaunch() {
	s.t.Helper()
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.WriteFile(s.conf, s.config(s.port), 0o600); err != nil {
		s.t.Fatalf("redistest: relaunch: %v", err)
	}
	p, err := startProcess(s.path, s.conf, s.dir)
	if err != nil {
		s.t.Fatalf("redistest: relaunch: %v", err)
	}
	s.proc = p
}

// Pause freezes the server (SIGSTOP): it keeps its connections open but answers
// nothing, as a hung or partitioned server would. Resume undoes it; Stop, Kill and
// the cleanup work on a paused server.
func (s *Server) Pause() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		s.t.Fatalf("redistest: pause: the server is not running")
	}
	s.proc.pause()
}

// Resume lets a paused server go on.
func (s *Server) Resume() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.resume()
	}
}

func (s *Server) cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill() // the data is thrown away: no need for a graceful stop
		s.proc = nil
	}
}

var errPortTaken = errors.New("port already in use")

// start runs the server on port and waits until it answers.
func (s *Server) start(port int) error {
	if err := os.WriteFile(s.conf, s.config(port), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	p, err := startProcess(s.path, s.conf, s.dir)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(ReadyTimeout)
	for {
		reply, err := command(s.dialer(), addr, s.opts.Password, 500*time.Millisecond, "PING")
		if err == nil && reply == "PONG" {
			break
		}
		select {
		case <-p.exited:
			out := p.out.String()
			if strings.Contains(out, "Address already in use") {
				return fmt.Errorf("redis-server on port %d: %w", port, errPortTaken)
			}
			return fmt.Errorf("redis-server exited before answering on %s; output:\n%s", addr, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			state := p.state() // before the kill: what the process was doing all that time
			p.kill()
			return fmt.Errorf("redis-server did not answer PING on %s within %v (last: %q, %v; process %s); output:\n%s",
				addr, ReadyTimeout, reply, err, state, p.out.String())
		}
	}
	s.mu.Lock()
	s.port, s.proc = port, p
	s.mu.Unlock()
	return nil
}

// config is the server's configuration file: loopback only, no snapshots, and the
// append-only file only when data must survive a restart.
func (s *Server) config(port int) []byte {
	var b bytes.Buffer
	if s.cert != nil {
		fmt.Fprintf(&b, "port 0\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-auth-clients no\n",
			port, quote(s.cert.certFile), quote(s.cert.keyFile))
	} else {
		fmt.Fprintf(&b, "port %d\n", port)
	}
	fmt.Fprintf(&b, "bind 127.0.0.1%s\ndaemonize no\nlogfile \"\"\nloglevel warning\n", strings.Join(append([]string{""}, s.opts.AlsoBind...), " "))
	fmt.Fprintf(&b, "dir %s\nsave \"\"\n", quote(s.dir))
	if s.opts.Persist {
		b.WriteString("appendonly yes\nappendfsync always\n")
	} else {
		b.WriteString("appendonly no\n")
	}
	if s.opts.Password != "" {
		fmt.Fprintf(&b, "requirepass %s\n", quote(s.opts.Password))
	}
	for _, l := range s.opts.Config {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

// quote writes v as a double-quoted value of a Redis config file.
func quote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

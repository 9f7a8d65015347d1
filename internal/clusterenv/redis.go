package clusterenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// The cluster's store: a redis-server (Debian's Redis 7 speaks the Valkey
// protocol) on a free port, which can be killed and restarted on the same
// address, with its data when it persists.

// RedisInstallHint says how to get redis-server, for the lines that skip without it.
const RedisInstallHint = "apt-get install redis-server"

// RedisStartTimeout bounds the wait for redis-server to answer PING.
const RedisStartTimeout = 10 * time.Second

// RedisOptions say how to run redis-server.
type RedisOptions struct {
	Bin string // the redis-server binary
	Dir string // its working directory: logs, and the append-only file
	// Host is the address it binds; empty means 127.0.0.1.
	Host string
	// Persist turns the append-only file on (fsync on every write), so that a
	// Restart after a Kill finds every write that was acknowledged. Without it the
	// server keeps nothing on disk, and a restart starts empty.
	Persist bool
}

// Redis is a redis-server started by StartRedis. Its methods are safe for
// concurrent use.
type Redis struct {
	// Addr is host:port; a Restart keeps it.
	Addr string
	opts RedisOptions
	cl   *Cleanups

	mu   sync.Mutex // held by Kill, Restart and Stop while they act
	runs int
	p    *Process
}

// StartRedis starts redis-server on a free port and waits until it answers PING.
// A port taken between the pick and the bind makes redis-server exit: then another
// port is tried. Its stop is pushed onto cl.
func StartRedis(ctx context.Context, cl *Cleanups, opts RedisOptions) (*Redis, error) {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	r := &Redis{opts: opts, cl: cl}
	var lastErr error
	for range 3 {
		addr, err := freeport.Pick()
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		r.Addr = net.JoinHostPort(opts.Host, port)
		r.mu.Lock()
		lastErr = r.start(ctx)
		r.mu.Unlock()
		if lastErr == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, lastErr
}

// start runs redis-server on r.Addr and waits for its PONG; r.mu is held.
func (r *Redis) start(ctx context.Context) error {
	_, port, _ := net.SplitHostPort(r.Addr)
	// Protected mode would refuse every client but loopback ones: the nodes of a
	// cluster in network namespaces of their own come from other addresses.
	argv := []string{r.opts.Bin, "--port", port, "--bind", r.opts.Host, "--dir", r.opts.Dir, "--save", "", "--protected-mode", "no"}
	if r.opts.Persist {
		argv = append(argv, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		argv = append(argv, "--appendonly", "no")
	}
	r.runs++
	p, err := StartProcess(r.cl, "redis-server", argv, nil, filepath.Join(r.opts.Dir, fmt.Sprintf("redis-%d.log", r.runs)))
	if err != nil {
		return err
	}
	r.p = p
	deadline := time.Now().Add(RedisStartTimeout)
	for {
		if Ping(r.Addr) == nil {
			return nil
		}
		if p.Exited() {
			return p.Failure("did not answer PING")
		}
		if time.Now().After(deadline) {
			p.Stop()
			return p.Failure(fmt.Sprintf("did not answer PING within %s", RedisStartTimeout))
		}
		if !SleepCtx(ctx, 20*time.Millisecond) { // poll interval
			p.Stop()
			return ctx.Err()
		}
	}
}

// Kill ends the server with SIGKILL, as a crash would, and waits for its exit.
func (r *Redis) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil || r.p.Exited() {
		return
	}
	_ = r.p.Signal(syscall.SIGKILL)
	<-r.p.Done()
}

// Restart starts the server again on the same address (after Kill or Stop) and
// waits until it answers PING. It fails when the port was taken meanwhile.
func (r *Redis) Restart(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil && !r.p.Exited() {
		return fmt.Errorf("clusterenv: redis-server on %s still runs", r.Addr)
	}
	return r.start(ctx)
}

// Stop stops the server (SIGTERM, then SIGKILL after the grace). Safe to call
// more than once.
func (r *Redis) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		r.p.Stop()
	}
}

// Running reports whether a server process runs now.
func (r *Redis) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p != nil && !r.p.Exited()
}

// Ping sends PING to addr and expects +PONG.
func Ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("clusterenv: redis-server answered PING with %q", strings.TrimSpace(line))
	}
	return nil
}

// RedisVersion returns what `redis-server --version` says, shortened.
func RedisVersion(bin string) string {
	b, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown version"
	}
	for f := range strings.FieldsSeq(string(b)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(b))
}

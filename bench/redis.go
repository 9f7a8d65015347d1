package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Part G's store: a redis-server started by the bench (Debian's Redis 7 speaks the
// Valkey protocol), on a free loopback port, with no persistence.

// redisInstallHint is printed when part G is skipped.
const redisInstallHint = "apt-get install redis-server"

// redisStartTimeout bounds the wait for redis-server to answer PING.
const redisStartTimeout = 10 * time.Second

// startRedis starts redis-server without persistence on a free loopback port and
// waits until it answers PING. A port taken between the pick and the bind makes
// redis-server exit: then another port is tried.
func startRedis(ctx context.Context, e *env, bin, dir string) (*process, string, error) {
	var lastErr error
	for attempt := range 3 {
		addr, err := freeAddr()
		if err != nil {
			return nil, "", err
		}
		_, port, _ := net.SplitHostPort(addr)
		argv := []string{bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}
		p, err := startProcess(e.clean, "redis-server", argv, nil, filepath.Join(dir, fmt.Sprintf("redis-%d.log", attempt+1)))
		if err != nil {
			return nil, "", err
		}
		deadline := time.Now().Add(redisStartTimeout)
		for {
			if lastErr = redisPing(addr); lastErr == nil {
				return p, addr, nil
			}
			if p.exited() {
				lastErr = p.failure("did not answer PING")
				break
			}
			if time.Now().After(deadline) {
				p.stop()
				return nil, "", p.failure(fmt.Sprintf("did not answer PING within %s", redisStartTimeout))
			}
			if !sleepCtx(ctx, 20*time.Millisecond) { // poll interval
				return nil, "", ctx.Err()
			}
		}
	}
	return nil, "", lastErr
}

// redisPing sends PING to addr and expects +PONG.
func redisPing(addr string) error {
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
		return fmt.Errorf("bench: redis-server answered PING with %q", strings.TrimSpace(line))
	}
	return nil
}

// redisVersion returns what `redis-server --version` says, shortened.
func redisVersion(bin string) string {
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

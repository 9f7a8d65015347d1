package main

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// lineServer answers every connection's first line with answer.
func lineServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for range 3 { // *1, $4, PING
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
				}
				c.Write([]byte(answer))
			}()
		}
	}()
	return ln.Addr().String()
}

func TestRedisPing(t *testing.T) {
	if err := redisPing(lineServer(t, "+PONG\r\n")); err != nil {
		t.Errorf("PONG: %v", err)
	}
	if err := redisPing(lineServer(t, "-LOADING\r\n")); err == nil || !strings.Contains(err.Error(), "LOADING") {
		t.Errorf("an error answer: %v", err)
	}
	addr, _ := freeAddr()
	if err := redisPing(addr); err == nil {
		t.Error("nothing listening, no error")
	}
}

// TestStartRedis_RealServer starts the real redis-server as part G does, and
// checks it answers and is gone after the cleanups.
func TestStartRedis_RealServer(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed: " + redisInstallHint)
	}
	cl := &cleanups{}
	defer cl.run()
	e := &env{clean: cl}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, addr, err := startRedis(ctx, e, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := redisPing(addr); err != nil {
		t.Fatalf("started, then: %v", err)
	}
	if v := redisVersion(bin); v == "" || v == "unknown version" {
		t.Errorf("version %q", v)
	}
	cl.run()
	if !p.exited() {
		t.Error("redis-server still runs after the cleanups")
	}
	if err := redisPing(addr); err == nil {
		t.Error("redis-server still answers after the cleanups")
	}
}

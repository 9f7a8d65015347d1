package clusterenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/redistest"
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
	if err := Ping(lineServer(t, "+PONG\r\n")); err != nil {
		t.Errorf("PONG: %v", err)
	}
	if err := Ping(lineServer(t, "-LOADING\r\n")); err == nil || !strings.Contains(err.Error(), "LOADING") {
		t.Errorf("an error answer: %v", err)
	}
	addr := freeport.Addr(t)
	if err := Ping(addr); err == nil {
		t.Error("nothing listening, no error")
	}
}

// redisBin finds redis-server, or skips the test (fails it when the environment
// requires redis, as CI does).
func redisBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatalf("redis-server not installed, and %s=1", redistest.RequireEnv)
		}
		t.Skip("redis-server not installed: " + RedisInstallHint)
	}
	return bin
}

// command sends one command to addr and returns the first line of the answer.
func command(t *testing.T, addr string, args ...string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(conn, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(conn, "$%d\r\n%s\r\n", len(a), a)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
		line, err = r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
	}
	return strings.TrimSpace(line)
}

// TestStartRedis_KillAndRestartKeepTheAddressAndTheData starts the real
// redis-server with its append-only file, kills it as a crash would, restarts it
// on the same address, and finds the data written before the kill.
func TestStartRedis_KillAndRestartKeepTheAddressAndTheData(t *testing.T) {
	bin := redisBin(t)
	cl := &Cleanups{}
	defer cl.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := StartRedis(ctx, cl, RedisOptions{Bin: bin, Dir: t.TempDir(), Persist: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := command(t, r.Addr, "SET", "k", "kept"); got != "+OK" {
		t.Fatalf("SET answered %q", got)
	}
	addr := r.Addr
	r.Kill()
	if r.Running() || Ping(addr) == nil {
		t.Fatal("redis-server still answers after Kill")
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Addr != addr {
		t.Errorf("restarted on %s, was %s", r.Addr, addr)
	}
	if got := command(t, r.Addr, "GET", "k"); got != "kept" {
		t.Errorf("GET after the restart = %q, want kept", got)
	}
	if v := RedisVersion(bin); v == "" || v == "unknown version" {
		t.Errorf("version %q", v)
	}
	cl.Run()
	if r.Running() || Ping(addr) == nil {
		t.Error("redis-server still answers after the cleanups")
	}
}

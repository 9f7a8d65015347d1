// Package freeport picks loopback addresses for servers that must be named before
// they start (an app's port in reaper's configuration, a Raft peer's address).
//
// Asking the kernel for a free port (listening on port 0) and closing it returns a
// port from the ephemeral range, which is also where every outgoing connection
// takes its local port: on a busy machine, one of them may take it before the
// server binds it. Pick chooses below that range instead, where only servers bind,
// and never hands the same port out twice in one process.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// low is the first port Pick considers; the last is below the ephemeral range.
const low = 20000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Pick returns "127.0.0.1:<port>" with a port that nothing listens on now, below
// the ephemeral range, and that this process has not returned before.
func Pick() (string, error) {
	high := ephemeralLow()
	var lastErr error
	for range 500 {
		port := low + rand.IntN(high-low)
		mu.Lock()
		taken := given[port]
		given[port] = true
		mu.Unlock()
		if taken {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			lastErr = err
			continue
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr, nil
	}
	return "", fmt.Errorf("freeport: no free port from %d to %d: %v", low, high, lastErr)
}

// Addr is Pick for tests: it fails the test when no port is free.
func Addr(t testing.TB) string {
	t.Helper()
	addr, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when it
// cannot be read), at least low+1000.
func ephemeralLow() int {
	first := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				first = n
			}
		}
	}
	return max(first, low+1000)
}

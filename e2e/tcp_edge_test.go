package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// A TCP route in front of an app the test plays itself: the process reaper runs
// is a sleep, and the port it is probed on is a listener of the test, opened
// once reaper started the app (before, the driver would take it for another
// program holding the app's port).
type playedApp struct {
	t    *testing.T
	addr string
	p    *reaperProc

	mu  sync.Mutex
	got [][]byte // what each connection to the app carried
}

func startPlayedApp(t *testing.T) *playedApp {
	addr, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	a := &playedApp{t: t, addr: addr}
	dir := t.TempDir()
	a.p = startReaper(t, dir, tcpConfig([]string{"sleep", "3600"}, fmt.Sprintf("{tcp: %q}", addr), addr, ", grace_period: 1m"))
	waitStatus(a.p, "Down", 1, 20*time.Second)
	return a
}

// open opens the app's port; serve handles each connection (the probes'
// included: they carry nothing).
func (a *playedApp) open(serve func(c *net.TCPConn)) {
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c.(*net.TCPConn))
		}
	}()
}

// record reads what a connection carries until its client closes it.
func (a *playedApp) record(c *net.TCPConn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, _ := io.ReadAll(c)
	if len(b) > 0 {
		a.mu.Lock()
		a.got = append(a.got, b)
		a.mu.Unlock()
	}
}

func (a *playedApp) carried(what string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.got {
		if bytes.Contains(b, []byte(what)) {
			return true
		}
	}
	return false
}

func TestTCP_AClientThatLeavesWhileHeldIsNeverDialled(t *testing.T) {
	a := startPlayedApp(t)
	route := a.p.tcpAddr("db-tcp")
	c, err := net.DialTimeout("tcp", route, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("first-client")); err != nil { // it speaks first, then gives up
		t.Fatal(err)
	}
	waitStatus(a.p, "WaitingForUp", 1, 10*time.Second)
	_ = c.Close()
	testwait.For(t, 10*time.Second, "the held client's departure logged", func() bool { return endedCount(a.p, "client_gone") == 1 })

	a.open(a.record) // the app is ready now
	waitStatus(a.p, "Up", 1, 20*time.Second)
	second, err := net.DialTimeout("tcp", route, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Write([]byte("second-client")); err != nil {
		t.Fatal(err)
	}
	_ = second.(*net.TCPConn).CloseWrite()
	testwait.For(t, 10*time.Second, "the second client's bytes at the app", func() bool { return a.carried("second-client") })
	_ = second.Close()
	if a.carried("first-client") {
		t.Error("the client that left while held was dialled: its bytes reached the app")
	}
}

func TestTCP_ATargetThatAcceptsAndResets(t *testing.T) {
	a := startPlayedApp(t)
	route := a.p.tcpAddr("db-tcp")
	c, err := net.DialTimeout("tcp", route, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("query")); err != nil {
		t.Fatal(err)
	}
	waitStatus(a.p, "WaitingForUp", 1, 10*time.Second)
	a.open(func(c *net.TCPConn) {
		_ = c.SetLinger(0) // close with a reset
		_ = c.Close()
	})
	// The client's connection ends (it is not left hanging), and the log says how.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Logf("the client read: %v", err)
	}
	defer func() {
		if t.Failed() {
			for _, l := range tcpLines(a.p) {
				t.Logf("tcp connection line: %v", l)
			}
		}
	}()
	// The reset may also come before the dial is through: a connect that the
	// kernel completed, then the target's accept and reset, all before the
	// dialer reads the socket's error (SO_ERROR is then ECONNRESET), which the
	// route logs as dial_failed. Either way the client is let go at once.
	testwait.For(t, 10*time.Second, "the reset logged", func() bool {
		return endedCount(a.p, "reset")+endedCount(a.p, "closed")+endedCount(a.p, "dial_failed") == 1
	})
	for _, l := range tcpLines(a.p) {
		if l["bytes_out"].(float64) != 0 {
			t.Errorf("bytes reached the client from a target that only reset: %v", l)
		}
	}
}

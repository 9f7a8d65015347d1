package tcproute

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

func TestConn_TwoThousandHeldHalfLeaveTheRestAreServedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 connections")
	}
	addr, got := startEchoApp(t)
	n := startNode(t, addr, func(c *Config) { c.MaxHeld = 3000 })
	n.fake.Manual = true // started, up when the test says
	n.awaitAsleep(t)

	const crowd = 2000
	begin := time.Now()
	conns := make([]net.Conn, crowd)
	for i := range conns {
		c, err := net.Dial("tcp", n.route)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		who := "stays"
		if i%2 == 1 {
			who = "left"
		}
		if _, err := fmt.Fprintf(c, "%s-%d\n", who, i); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	t.Logf("dialled: %v", time.Since(begin))
	testwait.For(t, 30*time.Second, "2,000 connections held", func() bool { c, _ := n.srv.Counts("db-tcp"); return c.Held == crowd })
	for i := 1; i < crowd; i += 2 {
		_ = conns[i].Close()
	}
	t.Logf("held: %v", time.Since(begin))
	testwait.For(t, 30*time.Second, "the 1,000 that left let go", func() bool { c, _ := n.srv.Counts("db-tcp"); return c.Held == crowd/2 })
	if starts := n.fake.Count("start", "db"); starts != 1 {
		t.Fatalf("starts = %d, want 1", starts)
	}
	t.Logf("left: %v", time.Since(begin))
	n.fake.FinishStart("db")
	buf := make([]byte, 32)
	for i := 0; i < crowd; i += 2 {
		c := conns[i]
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		want := fmt.Sprintf("stays-%d\n", i)
		if _, err := io.ReadFull(c, buf[:len(want)]); err != nil || string(buf[:len(want)]) != want {
			t.Fatalf("connection %d got %q, %v; want its echo", i, buf[:len(want)], err)
		}
	}
	t.Logf("served: %v", time.Since(begin))
	carried := got()
	for _, s := range carried {
		if strings.HasPrefix(s, "left") {
			t.Errorf("a connection that left while held reached the app: %q", s)
		}
	}
	if len(carried) != crowd/2 {
		t.Errorf("the app got %d connections with bytes, want %d", len(carried), crowd/2)
	}
}

// startEchoApp runs an app that reads what a connection brings (one read) and
// echoes it; got returns what every connection brought.
func startEchoApp(t *testing.T) (addr string, got func() []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var (
		mu      sync.Mutex
		carried []string
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 32)
				n, _ := io.ReadAtLeast(c, buf, 1)
				if n > 0 {
					mu.Lock()
					carried = append(carried, string(buf[:n]))
					mu.Unlock()
					_, _ = c.Write(buf[:n])
				}
			}()
		}
	}()
	return ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), carried...)
	}
}

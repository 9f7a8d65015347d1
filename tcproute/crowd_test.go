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
	// The app: reads what a connection brings (up to a newline) and echoes it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var (
		mu  sync.Mutex
		got []string
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
					got = append(got, string(buf[:n]))
					mu.Unlock()
					_, _ = c.Write(buf[:n])
				}
			}()
		}
	}()
	n := startNode(t, ln.Addr().String(), func(c *Config) { c.MaxHeld = 3000 })
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
	mu.Lock()
	defer mu.Unlock()
	for _, s := range got {
		if strings.HasPrefix(s, "left") {
			t.Errorf("a connection that left while held reached the app: %q", s)
		}
	}
	if len(got) != crowd/2 {
		t.Errorf("the app got %d connections with bytes, want %d", len(got), crowd/2)
	}
}

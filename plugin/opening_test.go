package plugin

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// A backend gets at most maxOpening connections that its app has not yet proven
// to accept; one frees its slot when the app's first byte arrives, when it
// closes, or after the proving wait.
func TestOpeningGate_BoundsConnectionsNotYetAccepted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	g := newOpeningGate()
	g.wait = time.Hour // proven only by a byte or a close, in this test
	dial := g.dial(&net.Dialer{})
	ctx := t.Context()
	var conns []net.Conn
	for range maxOpening {
		c, err := dial(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	full := func() error {
		cctx, cancel := context.WithCancel(ctx)
		cancel() // with every slot taken, only the context can end the wait
		c, err := dial(cctx, "tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := full(); !errors.Is(err, context.Canceled) {
		t.Fatalf("a dial past %d opening connections = %v, want it to wait (context.Canceled)", maxOpening, err)
	}
	// The app answers on the first connection: its slot is free.
	server := <-accepted
	server.Write([]byte("H"))
	if _, err := conns[0].Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	c, err := dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("a dial after a connection was proven: %v", err)
	}
	conns = append(conns, c)
	if err := full(); !errors.Is(err, context.Canceled) {
		t.Fatalf("the gate is full again, but a dial = %v", err)
	}
	// A connection that closes frees its slot too; closing it twice frees one.
	conns[1].Close()
	conns[1].Close()
	c, err = dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("a dial after a connection closed: %v", err)
	}
	conns = append(conns, c)
	if err := full(); !errors.Is(err, context.Canceled) {
		t.Fatalf("the gate is full again after one close, but a dial = %v", err)
	}
	// Past the proving wait, a connection the app never answered frees its slot.
	g.wait = 20 * time.Millisecond
	for _, c := range conns {
		c.Close()
	}
	c, err = dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testwait.For(t, 5*time.Second, "the silent connection's slot freed by the wait", func() bool { return len(g.slots) == 0 })
}

// net/http dials on a context detached from its request's cancellation: a dial
// waiting behind the gate for a request that has ended gives up (it would
// otherwise wait its turn, and open a connection nobody asked for any more), and
// takes no slot.
func TestOpeningGate_ADialWhoseRequestEndedStopsWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	g := newOpeningGate()
	g.wait = time.Hour
	dial := g.dial(&net.Dialer{})
	for range maxOpening {
		c, err := dial(t.Context(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	reqCtx, endRequest := context.WithCancel(t.Context())
	// What net/http's Transport gives DialContext: the request's values, not its
	// cancellation.
	dialCtx := context.WithoutCancel(withRequestDone(reqCtx))
	done := make(chan error, 1)
	go func() {
		c, err := dial(dialCtx, "tcp", ln.Addr().String())
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	endRequest()
	select {
	case err := <-done:
		if !errors.Is(err, errDialAbandoned) {
			t.Fatalf("the dial of an ended request = %v, want errDialAbandoned", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the dial of an ended request still waits for a slot after 5 s")
	}
	if n := len(g.slots); n != maxOpening {
		t.Errorf("%d slots taken, want %d: the abandoned dial took none", n, maxOpening)
	}
}

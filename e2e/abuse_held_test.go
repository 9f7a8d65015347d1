package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"
)

// Held requests with bodies larger than the 64 KiB read into memory: 50 with a
// Content-Length of 1 MiB, 50 chunked, every client writing its whole body. All
// are held, and the node's memory grows by far less than the bodies: a large
// body stays unread in the socket, a chunked one is read up to 64 KiB. Such a
// client's end of stream waits behind its unsent body (TCP's flow control): the
// route's fail_timeout (3 s) frees them all.
func abuseHeldBodies(t *testing.T, table *abuseTable) {
	const n = 100
	const size = 1 << 20
	e := startAbuse(t, "")
	m := measure(t, e.p, "held 1 MiB bodies", n)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for i := range n {
		c := dialRaw(t, e.p.gateway)
		chunked := i%2 == 1
		go func() {
			w := bufio.NewWriter(c)
			if chunked {
				fmt.Fprintf(w, "POST /big/%d HTTP/1.1\r\nHost: bigbody.test\r\nTransfer-Encoding: chunked\r\n\r\n", i)
			} else {
				fmt.Fprintf(w, "POST /big/%d HTTP/1.1\r\nHost: bigbody.test\r\nContent-Length: %d\r\n\r\n", i, size)
			}
			for range size / len(chunk) {
				if chunked {
					fmt.Fprintf(w, "%x\r\n", len(chunk))
				}
				w.Write(chunk)
				if chunked {
					w.WriteString("\r\n")
				}
			}
			w.Flush() // blocks once the socket's buffers are full: the gateway reads no more
		}()
	}
	e.waitHeld(t, "bigbody", n)
	e.hello(t)
	// The fail timeout ends every hold.
	e.waitHeld(t, "bigbody", 0)
	m.finish(table, 40<<20)
}

// Clients held with their body unread leave: 100 requests announce a 1 MiB body
// with Expect: 100-continue (curl's way for large bodies: the body waits for the
// gateway's 100 Continue, sent when the request is forwarded), are held (the
// route's max_held), then hang up. net/http does not watch a connection whose
// body is unread; the gateway does, and frees every place at once.
func abuseHeldClientsLeave(t *testing.T, table *abuseTable) {
	const n = 100
	e := startAbuse(t, "")
	m := measure(t, e.p, "held clients leave", n)
	var conns []net.Conn
	for i := range n {
		c := dialRaw(t, e.p.gateway)
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /up/%d HTTP/1.1\r\nHost: flood.test\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", i, 1<<20)
	}
	e.waitHeld(t, "flood", n)
	left := time.Now()
	for _, c := range conns {
		c.Close()
	}
	e.waitHeld(t, "flood", 0)
	t.Logf("%d held clients left: every place free %v later", n, time.Since(left).Round(time.Millisecond))
	if d := time.Since(left); d > 5*time.Second {
		t.Errorf("the places of held clients that left were free %v later, want at once", d)
	}
	e.hello(t)
	m.finish(table, 32<<20)
}

package e2e

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// slowEnd is how the gateway ended a slow client's connection.
type slowEnd struct {
	i      int
	after  time.Duration // from the connection's opening
	got    string        // what the gateway wrote before it closed
	closed bool          // it closed the connection (false: still open at the limit)
}

// slowClients opens n connections, writes head on each, then every pace writes
// one byte of trickle on each (nothing when trickle is empty). Each connection's
// end is sent on the returned channel; stop ends the pacing.
func slowClients(t *testing.T, addr string, n int, head func(i int) string, trickle string, pace time.Duration, limit time.Duration) (ends <-chan slowEnd, closed *atomic.Int64, stop func()) {
	t.Helper()
	out := make(chan slowEnd, n)
	closed = &atomic.Int64{}
	conns := make([]net.Conn, n)
	for i := range conns {
		c := dialRaw(t, addr)
		opened := time.Now()
		if _, err := c.Write([]byte(head(i))); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		go func() {
			got, ended := closedAfter(c, c, limit)
			if ended {
				closed.Add(1)
			}
			out <- slowEnd{i: i, after: time.Since(opened), got: got, closed: ended}
		}()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if trickle != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				b := []byte{trickle[k%len(trickle)]}
				for _, c := range conns {
					c.Write(b) // a connection the gateway closed fails: that is the point
				}
			}
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return out, closed, stop
}

// checkEnds collects n ends and checks that the gateway closed every connection,
// between lo and hi after it opened, having written want (a prefix; "" for
// nothing at all).
func checkEnds(t *testing.T, what string, ends <-chan slowEnd, n int, want string, lo, hi time.Duration) {
	t.Helper()
	var first, last time.Duration
	bad := 0
	for k := 0; k < n; k++ {
		e := <-ends
		if k == 0 || e.after < first {
			first = e.after
		}
		last = max(last, e.after)
		ok := e.closed && e.after >= lo && e.after <= hi && strings.HasPrefix(e.got, want) && (want != "" || e.got == "")
		if !ok {
			if bad < 5 {
				t.Errorf("%s %d: closed %v after %v, got %q; want closed between %v and %v with %q", what, e.i, e.closed, e.after.Round(time.Millisecond), e.got, lo, hi, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d connections not ended as documented", what, bad, n)
	}
	t.Logf("%s: %d connections closed by the gateway %v to %v after they opened", what, n, first.Round(time.Millisecond), last.Round(time.Millisecond))
}

// Slowloris headers: 500 clients send their headers one byte every 100 ms. The
// node's read_header_timeout (2 s here) closes each connection without an answer,
// and a normal request is answered while they are all still open.
func abuseSlowlorisHeaders(t *testing.T, table *abuseTable) {
	const n = 500
	e := startAbuse(t, "")
	m := measure(t, e.p, "slowloris headers", n)
	head := func(int) string { return "GET / HTTP/1.1\r\nHost: hello.localhost\r\nX-Slow: " }
	ends, closed, stop := slowClients(t, e.p.gateway, n, head, "abcdefgh", 100*time.Millisecond, 10*time.Second)
	e.hello(t)
	if c := closed.Load(); c != 0 {
		t.Errorf("%d slow connections were closed before the normal request was answered: it did not get through meanwhile", c)
	}
	checkEnds(t, "slow headers", ends, n, "", 2*time.Second-100*time.Millisecond, 5*time.Second)
	stop()
	e.hello(t)
	m.finish(table, 48<<20)
}

// Slowloris bodies: clients that send part of their body and then nothing are
// disconnected without an answer once the node's body_idle_timeout (1 s here)
// has passed since the gateway began reading it, on a held route as on a plain
// one (where the backend's requests end with them); clients that send their
// small body one byte every 100 ms to a held route are disconnected once the
// route's fail_timeout (3 s) has passed since they came. None of them counts as
// held: a held request's small body is read before the request is held.
//
// A plain route reads a body as it sends it to the backend, over a new
// connection for each of these clients: the backend's opening gate lets 4
// connections open at once, each until the app's first byte or 250 ms, and an
// app waiting for a body sends nothing. So the plain route's clients are fewer,
// and their bound adds 250 ms per 4 of them.
func abuseSlowlorisBodies(t *testing.T, table *abuseTable) {
	const silent, plain, trickling = 200, 32, 100
	e := startAbuse(t, "")
	m := measure(t, e.p, "slowloris bodies", silent+plain+trickling)
	head := func(host string) func(i int) string {
		return func(i int) string {
			return fmt.Sprintf("POST /b/%d HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n0123456789", i, host)
		}
	}
	quietPlain, _, _ := slowClients(t, e.p.gateway, plain, head("hello.localhost"), "", 0, 15*time.Second)
	quietHeld, _, _ := slowClients(t, e.p.gateway, silent, head("slowheld.test"), "", 0, 15*time.Second)
	trickle, _, stop := slowClients(t, e.p.gateway, trickling, head("slowheld.test"), "abcdefgh", 100*time.Millisecond, 15*time.Second)
	if h := e.held(t, "slowheld"); h != 0 {
		t.Errorf("%d requests held while their bodies are still coming, want 0", h)
	}
	e.hello(t)
	checkEnds(t, "silent body, plain route", quietPlain, plain, "", time.Second, 3*time.Second+plain*time.Second/16)
	checkEnds(t, "silent body, held route", quietHeld, silent, "", time.Second, 3*time.Second)
	checkEnds(t, "trickled body, held route", trickle, trickling, "", 3*time.Second-100*time.Millisecond, 6*time.Second)
	stop()
	testwait.For(t, 5*time.Second, "the backend's requests of silent clients end", func() bool { return e.helloIn.Load() == 0 })
	e.hello(t)
	m.finish(table, 48<<20)
}

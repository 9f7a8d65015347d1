package tcproute

import (
	"io"
	"net"
	"sync"
	"time"
)

// splice passes bytes both ways until both sides are done, and returns how the
// connection ended. io.Copy between two *net.TCPConn uses splice(2) on Linux:
// the bytes go from socket to socket through a kernel pipe, with no buffer of
// reaper's per connection. A side that closes its half (EOF) has its close passed
// on (CloseWrite): a client that sends its last query and shuts down its write
// still gets its answer.
func (r *route) splice(c *conn, target *net.TCPConn) string {
	var (
		wg      sync.WaitGroup
		upErr   error
		failure sync.Once
	)
	fail := func() { failure.Do(func() { c.end(EndReset) }) }
	wg.Go(func() {
		c.in, upErr = io.Copy(target, c.client)
		if upErr != nil {
			fail()
			return
		}
		_ = target.CloseWrite()
	})
	var downErr error
	c.out, downErr = io.Copy(c.client, target)
	if downErr != nil {
		fail()
	} else {
		_ = c.client.CloseWrite()
	}
	wg.Wait()
	_ = target.Close()
	_ = c.client.Close()
	if upErr != nil || downErr != nil {
		return EndReset
	}
	return EndClosed
}

// sweep starts the route's idle sweeper if connections may be reaped and none
// runs: while spliced connections are open, it looks at each one's last bytes
// (the kernel's TCP_INFO: no byte of the stream is read), reaps those quiet for
// the idle timeout, and tells the engine that bytes flowed on the others. A TCP
// keepalive carries no data and is not traffic.
func (r *route) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sweeping {
		return
	}
	r.sweeping = true
	go r.sweepLoop()
}

// sweepEvery is the sweeper's period for an idle timeout: often enough that a
// connection is reaped within a quarter of its timeout past it, at most once a
// second (bytes that flow are told to the engine within a second, well within
// its 5 s traffic flush).
func sweepEvery(idle time.Duration) time.Duration {
	if idle <= 0 {
		return time.Second
	}
	return min(max(idle/4, 10*time.Millisecond), time.Second)
}

func (r *route) sweepLoop() {
	every := sweepEvery(r.idle)
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		if r.spliced.Load() == 0 {
			r.sweeping = false
			r.mu.Unlock()
			return
		}
		conns := make([]*conn, 0, len(r.conns))
		for c := range r.conns {
			conns = append(conns, c)
		}
		r.mu.Unlock()
		flowed := false
		for _, c := range conns {
			c.mu.Lock()
			spliced, since := c.target != nil && c.ended == "", time.Since(c.splicedAt)
			c.mu.Unlock()
			if !spliced {
				continue
			}
			quiet, ok := quietFor(c.client)
			if !ok {
				continue
			}
			// The client's last bytes may be older than the splice (its first
			// message, sent while it was held): the app gets a whole idle
			// timeout to answer them.
			quiet = min(quiet, since)
			if quiet < every {
				flowed = true
			}
			if r.idle > 0 && quiet >= r.idle {
				c.end(EndIdle)
			}
		}
		if flowed {
			r.app.Touch()
		}
	}
}

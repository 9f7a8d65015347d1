package tcproute

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// How a connection ended, as the access log says.
const (
	EndClosed      = "closed"        // one side closed, the other followed
	EndReset       = "reset"         // a side failed (reset, timeout)
	EndIdle        = "idle"          // no byte for connection_idle_timeout (request_response)
	EndShutdown    = "shutdown"      // reaper is stopping
	EndClientGone  = "client_gone"   // the client left while held: the app was not dialled
	EndFailTimeout = "fail_timeout"  // the app was not up within fail_timeout
	EndTooManyHeld = "too_many_held" // max_held connections were held already
	EndAppFailed   = "app_failed"    // the app is in Error
	EndDialFailed  = "dial_failed"   // the app was up but its target did not accept
)

// Dial retries after a wake: a database may open its port a moment after its
// readiness says so (or after a tcp probe of another port), and a refused dial
// must then be tried again rather than handed to the client as a reset.
const (
	dialRetryFirst = 5 * time.Millisecond
	dialRetryMax   = 250 * time.Millisecond
	// refusedWindow bounds the retries of a dial refused by an app reaper
	// believes up and that does not turn out asleep.
	refusedWindow = 3 * time.Second
)

// route is one TCP route at run time.
type route struct {
	s    *Server
	cfg  *Config
	app  App
	ln   *net.TCPListener
	idle time.Duration // 0: never reap a quiet connection

	held, spliced atomic.Int64
	tally         tally // counts of its connections since reaper started (views.go)

	mu       sync.Mutex
	conns    map[*conn]struct{}
	sweeping bool
}

func newRoute(s *Server, c *Config, app App) *route {
	return &route{s: s, cfg: c, app: app, idle: c.IdleTimeout(), conns: map[*conn]struct{}{}}
}

// conn is one client connection.
type conn struct {
	client *net.TCPConn
	start  time.Time
	held   time.Duration
	in     int64 // bytes client → app
	out    int64 // bytes app → client

	mu        sync.Mutex
	target    *net.TCPConn
	splicedAt time.Time // when target was set: the idle clock starts no earlier
	ended     string
	cancel    context.CancelFunc // ends a hold
}

// end records why the connection ends (the first reason wins) and closes it.
func (c *conn) end(reason string) {
	c.mu.Lock()
	if c.ended == "" {
		c.ended = reason
	}
	t := c.target
	c.mu.Unlock()
	c.cancel()
	_ = c.client.Close()
	if t != nil {
		_ = t.Close()
	}
}

func (c *conn) reason(fallback string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == "" {
		c.ended = fallback
	}
	return c.ended
}

// serve handles one client connection from accept to close.
func (r *route) serve(client *net.TCPConn) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{client: client, start: time.Now(), cancel: cancel}
	r.tally.accepted.Add(1)
	defer cancel()
	if !r.add(c) {
		c.end(EndShutdown)
		r.logEnd(c, EndShutdown)
		return
	}
	defer r.remove(c)
	target, endTraffic, failed := r.connect(ctx, c)
	if target == nil {
		c.end(failed)
		r.logEnd(c, c.reason(failed))
		return
	}
	c.mu.Lock()
	c.target, c.splicedAt = target, time.Now()
	gone := c.ended != ""
	c.mu.Unlock()
	if gone { // shut down while dialling
		_ = target.Close()
		endTraffic()
		r.logEnd(c, c.reason(EndShutdown))
		return
	}
	r.spliced.Add(1)
	r.sweep()
	how := r.splice(c, target)
	r.spliced.Add(-1)
	endTraffic()
	r.logEnd(c, c.reason(how))
}

// connect waits for the app and dials it: it returns the target and the end of
// the connection's count as traffic, or nil and why not.
func (r *route) connect(ctx context.Context, c *conn) (*net.TCPConn, func(), string) {
	deadline := c.start.Add(r.cfg.policy.FailTimeout.D())
	stopWatch := watchGone(c.client, c.cancel)
	defer stopWatch()
	for {
		var (
			target *net.TCPConn
			failed string
		)
		if r.app.Status().Asleep() {
			target, failed = r.holdThenDial(ctx, c, deadline)
		} else {
			target, failed = r.dialAwake(ctx, deadline)
			if failed == "" && target == nil {
				continue // it was asleep after all: hold
			}
		}
		if target == nil {
			return nil, nil, failed
		}
		end, ok := r.app.Begin()
		if ok {
			return target, end, ""
		}
		_ = target.Close() // put to sleep since: hold again
	}
}

// holdThenDial holds the connection until the app is up, then dials it.
func (r *route) holdThenDial(ctx context.Context, c *conn, deadline time.Time) (*net.TCPConn, string) {
	heldAt := time.Now()
	r.held.Add(1)
	done, err := r.app.Hold(ctx, deadline)
	r.held.Add(-1)
	c.held += time.Since(heldAt)
	if ctx.Err() == nil {
		r.s.observer.TCPHeldWait(r.cfg.ID, time.Since(heldAt))
	}
	if err != nil {
		return nil, holdEnd(err)
	}
	if ctx.Err() != nil || peerClosed(c.client) {
		done(true) // the app did nothing wrong
		return nil, EndClientGone
	}
	target, err := r.dialRetry(ctx, deadline)
	done(err == nil)
	if err == nil {
		r.app.Answered()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, EndClientGone
		}
		r.s.log.Warn("tcp route: the app is up but its target did not accept", "route", r.cfg.ID, "app", r.cfg.AppID, "target", r.cfg.Target, "err", err)
		return nil, EndDialFailed
	}
	return target, ""
}

// dialAwake dials an app reaper believes awake (or has not seen yet). A refused
// dial is an app that stopped behind reaper's back (a crash, docker stop): the
// engine looks at once and asks a wake; nil and "" then mean hold.
func (r *route) dialAwake(ctx context.Context, deadline time.Time) (*net.TCPConn, string) {
	if ctx.Err() != nil {
		return nil, EndClientGone
	}
	target, err := r.dial(ctx)
	if err == nil {
		return target, ""
	}
	if refused(err) {
		if r.app.Refused(ctx) {
			return nil, ""
		}
		// Still up as far as reaper knows: its port may open a moment late.
		target, err = r.dialRetry(ctx, minTime(deadline, time.Now().Add(refusedWindow)))
		if err == nil {
			return target, ""
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, EndClientGone
	case r.app.Status() == reaper.StatusError:
		return nil, EndAppFailed
	}
	r.s.log.Warn("tcp route: the app's target did not accept", "route", r.cfg.ID, "app", r.cfg.AppID, "target", r.cfg.Target, "err", err)
	return nil, EndDialFailed
}

// dialRetry dials the target, again after a refusal with a short back-off,
// until it accepts, until, or ctx ends.
func (r *route) dialRetry(ctx context.Context, until time.Time) (*net.TCPConn, error) {
	wait := dialRetryFirst
	for {
		target, err := r.dial(ctx)
		if err == nil || !refused(err) || !time.Now().Add(wait).Before(until) {
			return target, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, dialRetryMax)
	}
}

func (r *route) dial(ctx context.Context) (*net.TCPConn, error) {
	c, err := r.s.dialer.DialContext(ctx, "tcp", r.cfg.Target)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// holdEnd names how a hold that did not end with the app up ends the connection.
func holdEnd(err error) string {
	switch {
	case errors.Is(err, reaper.ErrAppFailed):
		return EndAppFailed
	case errors.Is(err, reaper.ErrHoldTimeout):
		return EndFailTimeout
	case errors.Is(err, reaper.ErrTooManyHeld):
		return EndTooManyHeld
	case errors.Is(err, reaper.ErrShuttingDown):
		return EndShutdown
	}
	return EndClientGone
}

// add tracks a connection; false when the server is closing.
func (r *route) add(c *conn) bool {
	r.s.mu.Lock()
	closed := r.s.closed
	r.s.mu.Unlock()
	if closed {
		return false
	}
	r.mu.Lock()
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	return true
}

func (r *route) remove(c *conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// closeAll ends every connection of the route (reaper is stopping).
func (r *route) closeAll() {
	r.mu.Lock()
	all := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		all = append(all, c)
	}
	r.mu.Unlock()
	for _, c := range all {
		c.end(EndShutdown)
	}
}

// logEnd writes the connection's access log line.
func (r *route) logEnd(c *conn, how string) {
	r.tally.ended(how, c.in, c.out)
	r.s.observer.TCPConnectionEnded(r.cfg.ID, how, c.in, c.out)
	r.s.log.Info("tcp connection", "route", r.cfg.ID, "app", r.cfg.AppID, "client", c.client.RemoteAddr().String(),
		"bytes_in", c.in, "bytes_out", c.out, "held", c.held.Round(time.Microsecond),
		"duration", time.Since(c.start).Round(time.Microsecond), "ended", how)
}

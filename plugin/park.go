package plugin

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// Parking: a request held by an access step (the reaper plugin holding a request
// while its app wakes) can wait without a goroutine and without net/http's buffers
// for its connection. The gateway takes the HTTP/1 connection over (hijack) and
// keeps it, with the parsed request, until the plugin resumes it; one process-wide
// watcher notices clients that hang up meanwhile. To resume, the gateway hands the
// connection back to the same http.Server with a tiny carrier request in front of
// whatever the client sent next: the server reads the carrier as a new request,
// the gateway recognises its connection and runs the parked exchange again from
// the step that parked it, with a fresh net/http ResponseWriter. Everything
// net/http does for a response (framing, keep-alive, trailers, upgrades) stays its
// own. A held request costs its parsed request and a few hundred bytes instead of
// two goroutines and about 10 KiB of buffers.

// ErrParked is what ValidateAccess returns after a successful Exchange.Park: the
// request now waits, off its goroutine, until Parked.Resume.
var ErrParked = errors.New("plugin: the request is parked")

// Parked is a request parked by an access step. Its methods are safe for
// concurrent use.
type Parked struct {
	st      *state
	step    int  // the index of the access step (or DialFailureHandler) that parked it
	dialing bool // a DialFailureHandler parked it, after dialErr
	dialErr error
	conn    net.Conn
	pending []byte // what the client sent past the request, read before it was parked
	gone    func()

	mu    sync.Mutex
	phase parkPhase
	w     watch // how the connection is watched for a hang-up
}

type parkPhase uint8

const (
	parkParking parkPhase = iota // taken over; the gateway has not armed the watch yet
	parkArmed                    // waiting, watched
	parkResumed                  // handed back to the server (or about to be)
	parkGone                     // the client hung up
)

// Park takes the request off its goroutine while it waits: the gateway keeps the
// client's connection without reading from it, and calls gone (on another
// goroutine, at most once) if the client hangs up first. After a successful Park,
// ValidateAccess must return ErrParked (HandleDialFailure: DialParked); Resume later runs the same method of the same
// plugin again for the request, on a new goroutine, and the exchange goes on from
// there as if it had never stopped.
//
// Park returns nil when the request cannot be parked, and then changes nothing:
// an HTTP/2 request, a body not read entirely into memory (see BufferBody), a
// response already started, or a gateway whose server does not serve parked
// connections (Gateway.EnableParking). The caller then waits on its goroutine.
func (ex *Exchange) Park(gone func()) *Parked {
	if !ex.CanPark() {
		return nil
	}
	st := ex.st
	c, brw, err := http.NewResponseController(st.rec.w).Hijack()
	if err != nil {
		return nil
	}
	p := &Parked{st: st, step: st.step, dialing: st.dialing, dialErr: st.dialFailure, conn: c, gone: gone}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		p.pending = bytes.Clone(b)
	}
	// The client's body is in memory (or there is none): the server's reader of
	// it belongs to the connection just taken over and must not be used again.
	if bc, ok := st.body.rc.(bodyCloser); ok {
		st.body.rc = io.NopCloser(bc.Reader)
	}
	// The server's writer keeps the connection's buffers (8 KiB) alive: let go of
	// it. The server gives a new one when the request is resumed.
	st.rec.w = nil
	st.parked = p // the step's count (see stepMayPark) now stays until resume or hang-up
	return p
}

// CanPark reports whether Park would park the request (barring a failure to take
// its connection over). It changes nothing.
func (ex *Exchange) CanPark() bool {
	st := ex.st
	return st != nil && st.parked == nil && st.g.parking.Load() != nil && st.parkable()
}

// parkable reports whether the request may be parked: HTTP/1, no response started,
// and nothing of the body left on the connection.
func (st *state) parkable() bool {
	r := st.ex.Request
	return r.ProtoMajor == 1 && r.Method != http.MethodConnect &&
		!st.rec.wrote && !st.rec.hijacked && st.step >= 0 &&
		(st.body.rc == http.NoBody || st.body.buffered)
}

// Resume runs the parking step again for the request, then the rest of its
// exchange. It returns false, and does nothing, when the client already hung up
// (gone was or is being called) or the request was resumed before. It never
// blocks on the request: the exchange goes on on a goroutine of the server.
func (p *Parked) Resume() bool {
	p.mu.Lock()
	switch p.phase {
	case parkParking: // the gateway hands it back when it arms the watch
		p.phase = parkResumed
		p.mu.Unlock()
		return true
	case parkArmed:
		p.phase = parkResumed
		p.mu.Unlock()
		p.w.stop(p)
		p.handBack()
		return true
	}
	p.mu.Unlock()
	return false
}

// arm starts watching the connection once the parking goroutine is done with the
// exchange: from here on another goroutine may resume it or see its client leave.
func (p *Parked) arm() {
	p.mu.Lock()
	if p.phase == parkResumed {
		p.mu.Unlock()
		p.handBack()
		return
	}
	// Under the lock, so that Resume never stops a watch that has not started:
	// a hang-up seen at once waits for it on its own goroutine.
	p.phase = parkArmed
	p.w.start(p)
	p.mu.Unlock()
}

// hangUp is the watch's verdict: the client closed its side of the connection.
func (p *Parked) hangUp() {
	p.mu.Lock()
	if p.phase != parkArmed {
		p.mu.Unlock()
		return
	}
	p.phase = parkGone
	p.mu.Unlock()
	p.w.stop(p)
	p.conn.Close()
	if p.gone != nil {
		p.gone()
	}
	p.st.abandoned()
}

// handBack gives the connection back to the server, the carrier request first.
// The request counts as parked until the server reads the carrier: a server that
// starts shutting down before drops the connection unread.
func (p *Parked) handBack() {
	st := p.st
	rc := &resumeConn{Conn: p.conn, pending: append(carrier(st.ex.Request, isTLS(p.conn)), p.pending...)}
	p.pending = nil
	rc.p.Store(p)
	if !st.g.parking.Load().push(rc) {
		rc.abandon()
	}
}

// abandon ends the exchange of a handed-back connection that the server will not
// serve (it has shut down): nobody can answer the request any more.
func (c *resumeConn) abandon() {
	c.Conn.Close()
	if p := c.p.Swap(nil); p != nil {
		p.st.abandoned()
	}
}

// abandoned ends a parked exchange whose client is gone or cannot be answered:
// its OnDone functions run and its access line says 499.
func (st *state) abandoned() {
	st.g.parkedAdd(-1)
	st.clientGone = true
	st.finish()
	st.body.close()
	st.g.done(st, false)
}

// carrier is the request the server reads first on a handed-back connection. Only
// what shapes the server's response matters: HEAD (no body), the protocol version
// and whether the connection closes after it. A TLS connection always closes after
// the resumed response: the server sees it through a wrapper, so a next request
// on it would not be known as TLS.
func carrier(r *http.Request, tlsConn bool) []byte {
	method := "GET"
	if r.Method == http.MethodHead {
		method = "HEAD"
	}
	proto := "HTTP/1.1"
	if r.ProtoMinor == 0 {
		proto = "HTTP/1.0"
	}
	b := make([]byte, 0, 64)
	b = append(b, method+" / "+proto+"\r\nHost: parked\r\n"...)
	if tlsConn || r.Close {
		b = append(b, "Connection: close\r\n"...)
	}
	return append(b, "\r\n"...)
}

func isTLS(c net.Conn) bool {
	_, ok := c.(*tls.Conn)
	return ok
}

// resumeConn is a handed-back connection: it reads the carrier and the client's
// pipelined bytes first, then from the connection.
type resumeConn struct {
	net.Conn
	pending []byte
	p       atomic.Pointer[Parked] // taken by the first request read from it
}

func (c *resumeConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

type (
	resumeKey struct{}
	connKey   struct{} // the connection a request came on, for Exchange.WatchHangUp
)

// resumed returns the parked exchange a request resumes, if it is the carrier of
// a handed-back connection.
func (g *Gateway) resumed(req *http.Request) *Parked {
	if g.parking.Load() == nil || req.Host != "parked" {
		return nil
	}
	rc, _ := req.Context().Value(resumeKey{}).(*resumeConn)
	if rc == nil {
		return nil
	}
	return rc.p.Swap(nil)
}

// resume runs a parked exchange again from the step that parked it, answering on
// w, the server's writer for the carrier request.
func (g *Gateway) resume(p *Parked, w http.ResponseWriter, carrier *http.Request) {
	st := p.st
	st.parked = nil
	st.g.parkedAdd(-1)
	st.rec.w = w
	// The first request's context ended with its handler; this one ends when the
	// client goes away from now on.
	st.ex.Request = st.ex.Request.WithContext(carrier.Context())
	defer g.end(st)
	if p.dialing {
		st.dialFailed(p.step, p.dialErr)
		st.sendAgain()
	} else if st.runAccess(p.step) {
		st.forward()
	}
}

// EnableParking lets the gateway park held HTTP/1 requests (Exchange.Park) and
// serve them again with srv, the http.Server whose Handler is the gateway, and
// watch the clients of requests held with their body unread
// (Exchange.WatchHangUp): it sets srv.ConnContext (keeping a function already
// there). Call it before srv serves.
// The handed-back connections are served until srv shuts down; call Drain first
// so that parked requests are answered before it does.
func (g *Gateway) EnableParking(srv *http.Server) {
	next := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		if rc, ok := c.(*resumeConn); ok {
			ctx = context.WithValue(ctx, resumeKey{}, rc)
		}
		// Exchange.WatchHangUp watches the connection of a request held with
		// its body unread.
		return context.WithValue(ctx, connKey{}, c)
	}
	g.parking.Store(newConnQueue(srv))
}

// Parked returns how many requests are parked now, or in a step that may park
// them.
func (g *Gateway) Parked() int { return int(g.parkN.Load()) }

// Drain waits until no request is parked (each was resumed or its client left)
// or in a step that may park it, or until ctx ends. Parked requests wait for
// whoever parked them (the reaper answers its held requests when the node shuts
// down): Drain only waits. A request in a step counts from before the step, so
// that one about to park when Drain is called is waited for too.
func (g *Gateway) Drain(ctx context.Context) error {
	g.draining.Store(true)
	g.parkMu.Lock()
	if g.parkIdle == nil {
		g.parkIdle = make(chan struct{})
	}
	idle := g.parkIdle
	g.parkMu.Unlock()
	if g.parkN.Load() == 0 {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parkedAdd counts requests parked or in a step that may park them. Only a
// draining gateway takes the lock, when the count drops to 0.
func (g *Gateway) parkedAdd(d int64) {
	if g.parkN.Add(d) != 0 || !g.draining.Load() {
		return
	}
	g.parkMu.Lock()
	if g.parkIdle != nil {
		close(g.parkIdle)
		g.parkIdle = nil
	}
	g.parkMu.Unlock()
}

// stepMayPark counts the request as one that may park, for the step about to run
// (Drain waits for it), and reports whether it did: only HTTP/1 requests of a
// gateway that parks count. stepDidNotPark ends the count unless the step parked
// the request (the count then ends when it is resumed or its client leaves).
func (st *state) stepMayPark() bool {
	if st.g.parking.Load() == nil || st.ex.Request.ProtoMajor != 1 {
		return false
	}
	st.g.parkedAdd(1)
	return true
}

func (st *state) stepDidNotPark(counted bool) {
	if counted && st.parked == nil {
		st.g.parkedAdd(-1)
	}
}

// connQueue is the listener through which the server accepts handed-back
// connections. The server starts serving it at the first hand-back, so that its
// own listener is set up first. A queued connection is either served or, once the
// server has stopped, abandoned: never left waiting.
type connQueue struct {
	srv       *http.Server
	serveOnce sync.Once
	signal    chan struct{} // capacity 1: something was queued, or the queue closed

	mu     sync.Mutex
	conns  []*resumeConn
	closed bool
}

func newConnQueue(srv *http.Server) *connQueue {
	return &connQueue{srv: srv, signal: make(chan struct{}, 1)}
}

// push hands c to the server; false means the server has stopped serving.
func (q *connQueue) push(c *resumeConn) bool {
	q.serveOnce.Do(func() {
		go func() {
			_ = q.srv.Serve(q) // returns when the server shuts down
			q.Close()
			q.mu.Lock()
			left := q.conns
			q.conns = nil
			q.mu.Unlock()
			for _, c := range left {
				c.abandon()
			}
		}()
	})
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.conns = append(q.conns, c)
	q.mu.Unlock()
	q.wake()
	return true
}

func (q *connQueue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Accept returns the next handed-back connection. After Close it still returns
// those already queued, so that the server serves them while it shuts down.
func (q *connQueue) Accept() (net.Conn, error) {
	for {
		q.mu.Lock()
		if len(q.conns) > 0 {
			c := q.conns[0]
			q.conns[0] = nil
			q.conns = q.conns[1:]
			q.mu.Unlock()
			return c, nil
		}
		if q.closed {
			q.mu.Unlock()
			q.wake() // for a concurrent Accept, if any
			return nil, net.ErrClosed
		}
		q.mu.Unlock()
		<-q.signal
	}
}

// Close stops the queue from taking connections; those queued are still accepted.
func (q *connQueue) Close() error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
	return nil
}

func (q *connQueue) Addr() net.Addr { return queueAddr{} }

type queueAddr struct{}

func (queueAddr) Network() string { return "parked" }
func (queueAddr) String() string  { return "parked" }

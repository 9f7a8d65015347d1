package plugin

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// watch notices when the client of a parked request hangs up. On Linux a
// process-wide epoll set watches every parked connection for the peer's close,
// with no goroutine per connection; a connection without a file descriptor (or
// another system) gets a goroutine blocked in a one-byte Read, as net/http's own
// background read does.
type watch struct {
	fd    int32 // watched by the epoll set when done is nil
	gen   uint32
	owner hangUpper     // told of a hang-up the epoll set sees
	done  chan struct{} // the reading goroutine's end, when one reads
}

// hangUpper is what a watch tells of a hang-up.
type hangUpper interface{ hangUp() }

// start begins watching p's connection; a hang-up calls p.hangUp, perhaps at once.
func (w *watch) start(p *Parked) {
	w.owner = p
	if rc := rawConnOf(p.conn); rc != nil && hangups.add(w, rc) {
		return
	}
	w.done = make(chan struct{})
	go w.read(p)
}

// stop ends the watch. Once it returns, the watch neither reads from the
// connection nor calls hangUp on its account (a call already made finds the
// request resumed and does nothing).
func (w *watch) stop(p *Parked) {
	if w.done == nil {
		hangups.remove(w, rawConnOf(p.conn))
		return
	}
	_ = p.conn.SetReadDeadline(time.Unix(1, 0)) // unblocks the Read
	<-w.done
	_ = p.conn.SetReadDeadline(time.Time{})
}

// read waits for the client's next byte or its end. Bytes that arrive are kept
// for the server (a pipelined request), up to maxPending; an error, the end of
// the stream or a client that sends more than that while it waits is a hang-up,
// unless stop caused it.
func (w *watch) read(p *Parked) {
	var b [1]byte
	for {
		n, err := p.conn.Read(b[:])
		if n > 0 {
			p.pending = append(p.pending, b[0])
		}
		if err != nil || len(p.pending) > maxPending {
			close(w.done)
			p.hangUp() // does nothing when stop interrupted the Read
			return
		}
	}
}

// maxPending bounds what a parked client may send ahead of its answer when a
// goroutine reads it (with epoll, unread bytes stay in the socket, whose buffer
// and TCP's flow control bound them).
const maxPending = 64 << 10

// rawConnOf returns the socket under c, TLS and a handed-back connection
// included, or nil.
func rawConnOf(c net.Conn) syscall.RawConn {
	if r, ok := c.(*resumeConn); ok {
		c = r.Conn
	}
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// WatchHangUp watches the connection of an HTTP/1 request that waits with its
// body unread — net/http notices a client that leaves only once the body is
// read — for its client hanging up (closing its side of the connection, or
// resetting it), without reading from it. On a hang-up the gateway closes the
// connection, since nothing can be answered on it any more, and calls gone, once,
// on another goroutine. stop ends the watch: once it returns, gone is not called
// (unless it already runs). Where net/http watches the client itself (HTTP/2, no
// body, a body in memory) or no watch is possible (a gateway that does not park,
// see EnableParking; another system than Linux), stop does nothing and gone is
// never called.
func (ex *Exchange) WatchHangUp(gone func()) (stop func()) {
	st := ex.st
	if st == nil || ex.Request.ProtoMajor != 1 || st.body.rc == http.NoBody || st.body.buffered {
		return func() {}
	}
	c, _ := ex.Request.Context().Value(connKey{}).(net.Conn)
	rc := rawConnOf(c)
	if rc == nil {
		return func() {}
	}
	h := &bodyWatch{conn: c, gone: gone}
	h.w.owner = h
	if !hangups.add(&h.w, rc) {
		return func() {}
	}
	return h.stop
}

// bodyWatch is the watch of WatchHangUp.
type bodyWatch struct {
	conn net.Conn
	gone func()
	w    watch

	mu    sync.Mutex
	ended bool // stopped, or hung up
}

func (h *bodyWatch) hangUp() {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return
	}
	h.ended = true
	h.mu.Unlock()
	h.conn.Close()
	h.gone()
}

func (h *bodyWatch) stop() {
	h.mu.Lock()
	ended := h.ended
	h.ended = true
	h.mu.Unlock()
	if !ended {
		hangups.remove(&h.w, rawConnOf(h.conn))
	}
}

package plugin

import (
	"crypto/tls"
	"net"
	"syscall"
	"time"
)

// watch notices when the client of a parked request hangs up. On Linux a
// process-wide epoll set watches every parked connection for the peer's close,
// with no goroutine per connection; a connection without a file descriptor (or
// another system) gets a goroutine blocked in a one-byte Read, as net/http's own
// background read does.
type watch struct {
	fd   int32 // watched by the epoll set when done is nil
	gen  uint32
	done chan struct{} // the reading goroutine's end, when one reads
}

// start begins watching p's connection; a hang-up calls p.hangUp, perhaps at once.
func (w *watch) start(p *Parked) {
	if rc := rawConnOf(p.conn); rc != nil && hangups.add(p, rc) {
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
		hangups.remove(p, rawConnOf(p.conn))
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

// rawConnOf returns the socket under c, TLS included, or nil.
func rawConnOf(c net.Conn) syscall.RawConn {
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

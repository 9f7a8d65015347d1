package plugin

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// A backend is given at most maxOpening connections that are still opening: dialled
// but not yet proven accepted by the app, which a connection is once the app's
// first byte arrives on it (an answer, or a TLS handshake), or after provingWait.
// A crowd of requests released to an app that just booted would otherwise open
// hundreds of connections at once: an app with a small listen backlog (five for
// Python's http.server) drops the ones it has no room for, the kernel on the
// gateway's side does not always know (tcp_abort_on_overflow is off by default),
// and their requests wait for retransmissions, up to a minute. A fast app proves
// each connection within a millisecond, so the bound costs it nothing; requests
// that find no connection wait for one, as they do past max_connections.
const (
	maxOpening  = 4
	provingWait = 250 * time.Millisecond
)

// openingGate bounds the connections of one backend that are still opening.
type openingGate struct {
	slots chan struct{}
	wait  time.Duration // provingWait
}

func newOpeningGate() *openingGate {
	return &openingGate{slots: make(chan struct{}, maxOpening), wait: provingWait}
}

// dial is a DialContext that waits for a slot (or ctx, or the end of the request
// that asked for the dial), dials, and keeps the slot until the connection is
// proven accepted or closes.
func (g *openingGate) dial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		gone, _ := ctx.Value(requestDoneKey{}).(<-chan struct{})
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-gone:
			return nil, errDialAbandoned
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			<-g.slots
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok { // not TCP: nothing to prove
			<-g.slots
			return c, nil
		}
		pc := &provingConn{TCPConn: tc, gate: g}
		time.AfterFunc(g.wait, pc.proven) // a no-op if proven before
		return pc, nil
	}
}

// net/http dials on a context detached from the cancellation of the request that
// asked for the connection, so that a connection a request no longer wants still
// goes to the pool. Behind the gate, that dial would wait its turn all the same:
// clients that cancel their requests (an HTTP/2 rapid reset, impatient clients)
// would pile up goroutines waiting for a slot, and connections the pool keeps
// open, released four per proving wait, while the requests of clients still
// there wait behind them. The context keeps its values, though: the request's
// own end travels as one (withRequestDone), and a dial that has not got its slot
// when the request ends is abandoned. Any other request waiting for a
// connection has its own dial.
type requestDoneKey struct{}

// errDialAbandoned is the error of a dial abandoned because its request ended.
var errDialAbandoned = errors.New("plugin: the request that asked for a connection to the backend is gone")

// withRequestDone returns ctx, an outbound request's context, carrying its Done
// channel for the gate.
func withRequestDone(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestDoneKey{}, ctx.Done())
}

// provingConn is a connection that holds its backend's opening slot until the
// app's first byte arrives on it, it closes, or provingWait passes. Embedding the
// *net.TCPConn keeps its ReadFrom, WriteTo and CloseWrite (splicing, half-closes).
type provingConn struct {
	*net.TCPConn
	gate *openingGate
	once sync.Once
}

// proven gives the slot back, once.
func (c *provingConn) proven() { c.once.Do(func() { <-c.gate.slots }) }

func (c *provingConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if n > 0 || err != nil {
		c.proven()
	}
	return n, err
}

func (c *provingConn) Close() error {
	c.proven()
	return c.TCPConn.Close()
}

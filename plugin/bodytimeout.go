package plugin

import (
	"net/http"
	"sync"
	"time"
)

// The body idle timeout: a client that stops sending its request body half-way
// would otherwise keep its request's goroutine, and the backend connection the
// body streams to, for as long as it keeps its connection open — net/http has no
// bound between two reads of a body, and a streaming proxy reads the body as the
// backend takes it, so nothing times out. Each read of the client's body waits
// at most GatewayOptions.BodyIdleTimeout (at most an eighth more: the deadline is
// moved only once an eighth of it has passed, not on every read of a fast
// upload), and never past a plugin's deadline (Exchange.SetReadDeadline). A read
// past it fails: net/http gives up on the connection, and the request, which can
// no longer be answered, ends as a client gone (499). A client that sends its
// body slowly but steadily is not bounded: the backend's own limits are.
//
// The bound ends with the body (at its end the deadline is cleared: net/http
// then watches the connection with a read of its own), and with the exchange. An
// HTTP/2 stream goes on both ways: once the backend's answer begins, a client
// may pause its body for as long as the exchange lasts, so the bound ends there.
// An HTTP/1 request keeps it past its answer's beginning: net/http reads what is
// left of a body before the connection's next request.

// bodyDeadline is the read deadline a request body's reads set on the client's
// connection (or HTTP/2 stream).
type bodyDeadline struct {
	mu    sync.Mutex
	set   time.Time // the deadline the last arm set; zero when none is set
	until time.Time // a plugin's deadline: reads never wait past it
	off   bool      // the bound ended
}

// arm bounds the next read of the client's body.
func (b *reqBody) arm() {
	if b.st == nil || b.st.g == nil || b.st.g.bodyIdle <= 0 {
		return
	}
	idle := b.st.g.bodyIdle
	d := &b.deadline
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off || b.st.rec.w == nil {
		return
	}
	now := time.Now()
	if d.set.Sub(now) > idle { // set less than idle/8 ago
		return
	}
	t := now.Add(idle + idle/8)
	if !d.until.IsZero() && d.until.Before(t) {
		t = d.until
	}
	if http.NewResponseController(b.st.rec.w).SetReadDeadline(t) == nil {
		d.set = t
	}
}

// endDeadline ends the bound for good. With clear, the connection's deadline is
// put back to the plugin's, or none (the body ended, or an HTTP/2 answer began);
// without, it is left as it is (the exchange ended: net/http sets its own for
// the connection's next request, and a late read by the transport, after the
// handler returned, must not touch a writer that is done).
func (b *reqBody) endDeadline(clear bool) {
	d := &b.deadline
	d.mu.Lock()
	defer d.mu.Unlock()
	d.off = true
	if clear && !d.set.IsZero() && b.st != nil && b.st.rec.w != nil {
		_ = http.NewResponseController(b.st.rec.w).SetReadDeadline(d.until)
		d.set = time.Time{}
	}
}

// setUntil is Exchange.SetReadDeadline.
func (b *reqBody) setUntil(t time.Time) error {
	d := &b.deadline
	d.mu.Lock()
	defer d.mu.Unlock()
	d.until, d.set = t, time.Time{}
	return http.NewResponseController(b.st.rec.w).SetReadDeadline(t)
}

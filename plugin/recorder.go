package plugin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
)

// recorder wraps the client's ResponseWriter: it records the status and counts the
// body bytes for the access log, puts the request id on every response, and keeps
// flushing, hijacking (upgrades) and http.ResponseController working.
type recorder struct {
	w        http.ResponseWriter
	st       *state
	status   int
	wrote    bool
	hijacked bool
	// bytes is atomic because after an upgrade the copy from the backend runs on
	// its own goroutine and may outlive the handler by a moment.
	bytes atomic.Int64
}

var (
	_ http.Flusher  = (*recorder)(nil)
	_ http.Hijacker = (*recorder)(nil)
)

func (r *recorder) Header() http.Header { return r.w.Header() }

// WriteHeader sets the request id on the final response (the backend's value, if
// any, is replaced by the id the backend was given) and records the status.
// Informational (1xx) responses other than 101 pass through unrecorded.
func (r *recorder) WriteHeader(code int) {
	if !r.wrote && !r.hijacked && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols) {
		r.wrote, r.status = true, code
		r.w.Header()[headerRequestID] = r.st.idHeader[:]
		if req := r.st.ex.Request; req != nil && req.ProtoMajor >= 2 {
			r.st.body.endDeadline(true) // a stream goes on both ways from here
		}
	}
	r.w.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.w.Write(b)
	r.bytes.Add(int64(n))
	return n, err
}

// FlushError is what http.ResponseController.Flush calls.
func (r *recorder) FlushError() error {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(r.w).Flush()
}

// Flush implements http.Flusher for code that asserts it.
func (r *recorder) Flush() { _ = r.FlushError() }

// Hijack takes the client connection over for an upgrade. Bytes written to the
// connection afterwards are counted as body bytes.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(r.w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	r.hijacked = true
	if !r.wrote {
		r.status = http.StatusSwitchingProtocols
	}
	return &countingConn{Conn: c, n: &r.bytes}, brw, nil
}

// Unwrap lets http.ResponseController reach the server's writer (deadlines, full
// duplex).
func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

// countingConn counts the bytes written to a hijacked connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// CloseWrite half-closes the connection when it can, so the client sees the
// backend's end of stream.
func (c *countingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// reqBody wraps the client's request body. It counts the bytes read, so that
// after a failed dial the gateway knows whether the request can be sent again
// intact (nothing read), and it ignores Close, which the transport calls when a
// dial fails; the gateway closes the real body when the handler ends. It also
// carries the request's state to the proxy's Rewrite without a context value.
type reqBody struct {
	rc       io.ReadCloser
	st       *state
	n        atomic.Int64 // read by the handler while the transport may still read
	buffered bool         // the whole body is in memory (Exchange.BufferBody)
	data     []byte       // the body, when buffered
	orig     io.Closer    // the client's body, when buffered
	deadline bodyDeadline // bounds the waits for the client's bytes (bodytimeout.go)
}

// rewind makes a buffered body readable from its start again, for a request sent
// once more; false when the body is not in memory.
func (b *reqBody) rewind() bool {
	if !b.buffered {
		return false
	}
	b.rc = bodyCloser{Reader: bytes.NewReader(b.data), Closer: b.orig}
	b.n.Store(0)
	return true
}

func (b *reqBody) Read(p []byte) (int, error) {
	if b.rc == nil {
		return 0, io.EOF
	}
	n, err := b.readClient(p)
	b.n.Add(int64(n))
	return n, err
}

// readClient reads the body; a read that waits for the client is bounded by the
// body idle timeout (bodytimeout.go).
func (b *reqBody) readClient(p []byte) (int, error) {
	waits := !b.buffered && b.rc != http.NoBody
	if waits {
		b.arm()
	}
	n, err := b.rc.Read(p)
	if waits && err == io.EOF {
		b.endDeadline(true)
	}
	return n, err
}

// clientReader reads a body with readClient, without counting what it reads.
type clientReader struct{ b *reqBody }

func (r clientReader) Read(p []byte) (int, error) { return r.b.readClient(p) }

// Close does nothing: see the type's comment.
func (b *reqBody) Close() error { return nil }

func (b *reqBody) close() {
	if b.rc != nil {
		_ = b.rc.Close()
	}
}

// exchangeHandler is the handler of Exchange.Logger: it adds the request id to
// records only when a record is actually written (h already carries the route), so
// a request whose plugins log nothing pays one small allocation, not the
// formatting of a logger.With.
type exchangeHandler struct {
	h  slog.Handler
	id string
}

func (h *exchangeHandler) attrs() []slog.Attr {
	return []slog.Attr{slog.String("request_id", h.id)}
}

func (h *exchangeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.h.Enabled(ctx, l)
}

func (h *exchangeHandler) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs()...)
	return h.h.Handle(ctx, r)
}

func (h *exchangeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.h.WithAttrs(append(h.attrs(), as...))
}

func (h *exchangeHandler) WithGroup(name string) slog.Handler {
	return h.h.WithAttrs(h.attrs()).WithGroup(name)
}

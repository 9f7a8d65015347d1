package trigger

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// The producer endpoint stands in front of the gateway (Endpoint.Wrap), so its
// calls never reach the gateway's access log: it writes their lines itself, in
// the gateway's format (plugin.Gateway's logAccess: message "access", the same
// keys in the same order), followed by what the call did: the trigger, the app
// it wakes, and the outcome. Never the Authorization header, never the query.

// upstreamEndpoint is the access line's upstream: no target was tried, the
// gateway's listener answered (the gateway says "gateway" for its own answers).
const upstreamEndpoint = "gateway"

// endpointCall is one call's access line in the making.
type endpointCall struct {
	e     *Endpoint
	req   *http.Request
	start time.Time
	id    string // the request id
	// client is the client's own X-Request-Id, when not the request's.
	client string
	rec    countingWriter
	// app is the app of the trigger called ("" when unknown); outcome what
	// the call did: "woken", "already up or waking", "refused: " and why.
	app, outcome string
}

// begin starts a call's line: the request gets its id, which the answer
// carries in X-Request-Id as the gateway's answers do.
func (e *Endpoint) begin(w http.ResponseWriter, r *http.Request) *endpointCall {
	c := &endpointCall{e: e, req: r, start: time.Now(), rec: countingWriter{w: w}}
	c.id, c.client = plugin.RequestIDs(r, e.trusted)
	w.Header().Set("X-Request-Id", c.id)
	return c
}

// end writes the line.
func (c *endpointCall) end() {
	if c.e.access == nil {
		return
	}
	ctx := context.Background()
	h := c.e.access.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	now := time.Now()
	status := c.rec.status
	if status == 0 {
		status = http.StatusOK
	}
	r := slog.NewRecord(now, slog.LevelInfo, "access", 0)
	r.AddAttrs(
		slog.String("request_id", c.id),
		slog.String("route", ""),
		slog.String("method", c.req.Method),
		slog.String("host", c.req.Host),
		slog.String("path", c.req.URL.Path), // never the query
		slog.Int("status", status),
		slog.Int64("bytes", c.rec.bytes),
		slog.Duration("duration", now.Sub(c.start)),
		slog.String("upstream", upstreamEndpoint),
		slog.String("client", plugin.ClientIP(c.req, c.e.trusted).String()),
	)
	if c.client != "" {
		r.AddAttrs(slog.String("client_request_id", c.client))
	}
	r.AddAttrs(slog.String("endpoint", "producer"), slog.String("app", c.app), slog.String("outcome", c.outcome))
	_ = h.Handle(ctx, r) // a log that cannot be written is not the call's error
}

// countingWriter keeps the status and the body's size of an answer.
type countingWriter struct {
	w      http.ResponseWriter
	status int
	bytes  int64
}

func (w *countingWriter) Header() http.Header { return w.w.Header() }

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.w.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.w.Write(b)
	w.bytes += int64(n)
	return n, err
}

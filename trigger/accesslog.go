package trigger

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// The producer endpoint stands in front of the gateway (Endpoint.Wrap), so its
// calls never reach the gateway's access log: it writes their lines itself,
// with the gateway's keys (plugin.LogAccess), followed by what the call did:
// the app it wakes and the outcome. Never the Authorization header, never the
// query.

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
	status := c.rec.status
	if status == 0 {
		status = http.StatusOK
	}
	now := time.Now()
	plugin.LogAccess(c.e.access, now, plugin.AccessLine{
		RequestID: c.id, Method: c.req.Method, Host: c.req.Host, Path: c.req.URL.Path,
		Status: status, Bytes: c.rec.bytes, Duration: now.Sub(c.start), Upstream: plugin.UpstreamGateway,
		Client: plugin.ClientIP(c.req, c.e.trusted), ClientRequestID: c.client,
	}, slog.String("endpoint", "producer"), slog.String("app", c.app), slog.String("outcome", c.outcome))
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

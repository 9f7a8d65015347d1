package plugin

import (
	"context"
	"log/slog"
	"net/netip"
	"time"
)

// AccessLine is one request's access line: the keys every listener that
// answers HTTP writes (the gateway's, and the producer endpoint's in front of
// it), in that order, so that one parser reads them all.
type AccessLine struct {
	RequestID string
	Route     string
	Method    string
	Host      string
	Path      string // never the query: it may hold secrets
	Status    int
	Bytes     int64
	Duration  time.Duration
	// Upstream is the target tried; "gateway" when the listener answered
	// itself.
	Upstream string
	Client   netip.Addr
	// ClientRequestID is the client's own X-Request-Id when it is not the
	// request's id ("": not written).
	ClientRequestID string
}

// LogAccess writes l through log's handler at Info, message "access", at now,
// followed by extra. It hands the handler a record of its own, as
// Logger.LogAttrs would, but without capturing the caller (runtime.Callers,
// for a source reaper's handlers never print) nor building the attributes in
// a slice first: on an auth call for an awake app those were a quarter of the
// line's cost. A line that cannot be written is not the request's error.
func LogAccess(log *slog.Logger, now time.Time, l AccessLine, extra ...slog.Attr) {
	ctx := context.Background()
	h := log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(now, slog.LevelInfo, "access", 0)
	r.AddAttrs(
		slog.String("request_id", l.RequestID),
		slog.String("route", l.Route),
		slog.String("method", l.Method),
		slog.String("host", l.Host),
		slog.String("path", l.Path),
		slog.Int("status", l.Status),
		slog.Int64("bytes", l.Bytes),
		slog.Duration("duration", l.Duration),
		slog.String("upstream", l.Upstream),
		slog.String("client", l.Client.String()),
	)
	if l.ClientRequestID != "" {
		r.AddAttrs(slog.String("client_request_id", l.ClientRequestID))
	}
	r.AddAttrs(extra...)
	_ = h.Handle(ctx, r)
}

// UpstreamGateway is an access line's Upstream when no target was tried: the
// listener answered itself.
const UpstreamGateway = upstreamGateway

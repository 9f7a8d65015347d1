package plugin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"strings"
	"syscall"
)

// stateKey is the context key of the request state, set on the outbound request
// only for routes with response transformers (ModifyResponse has no other way to
// reach it).
type stateKey struct{}

// errTransformFailed cancels the outbound request when a request transformer
// failed: Rewrite cannot return an error, but a request with a cancelled context
// makes the transport fail at once, before dialing, and ErrorHandler then answers
// for the plugin.
var errTransformFailed = errors.New("plugin: a request transformer failed")

var abortedContext = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errTransformFailed)
	return ctx
}()

// newProxy builds the route's reverse proxy, once per build. It uses Rewrite, not
// Director, so that hop-by-hop headers named by the client's Connection header are
// removed before the proxy adds its own headers, and inbound X-Forwarded-* are
// dropped unless the peer is trusted.
func (r *Route) newProxy(tr http.RoundTripper, logger *slog.Logger) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        r.rewrite,
		Transport:      tr,
		BufferPool:     buffers,
		ModifyResponse: r.modifyResponse,
		ErrorHandler:   r.errorHandler,
		// FlushInterval stays 0: ReverseProxy already flushes every write of
		// text/event-stream responses and of responses of unknown length, and
		// buffers the rest (large downloads) for less CPU.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
}

// rewrite sets the outbound request: target URL (strip_path, target path, root),
// Host (the target's), X-Forwarded-*, X-Request-Id, then the request
// transformers.
func (r *Route) rewrite(pr *httputil.ProxyRequest) {
	st := pr.In.Body.(*reqBody).st
	out := pr.Out
	t := r.targets[r.wrr.pick()]
	st.upstream = t.name

	p, raw := st.path, out.URL.RawPath
	if st.pathChanged {
		raw = "" // re-escaped from the resolved path
	}
	if r.strip && st.prefix != "" {
		p = p[len(st.prefix):]
		if raw != "" {
			if hasPathPrefix(raw, st.prefix) {
				raw = raw[len(st.prefix):]
			} else {
				raw = "" // the prefix was escaped differently: use the decoded path
			}
		}
	}
	out.URL.Path, out.URL.RawPath = p, raw
	// SetURL joins the target's path (with root) and the path, and clears Host so
	// that the target's host is sent.
	pr.SetURL(t.url)
	if p == "" { // the whole path was the prefix: the target path itself
		out.URL.Path, out.URL.RawPath = t.basePath, ""
		if out.URL.Path == "" {
			out.URL.Path = "/"
		}
	}

	in := pr.In.Header
	if st.trusted {
		if v := in["X-Forwarded-For"]; len(v) > 0 {
			out.Header["X-Forwarded-For"] = v // SetXForwarded appends the peer
		}
	}
	pr.SetXForwarded()
	if !st.trusted {
		// Another spelling of the client's address, which apps also read: from
		// an untrusted peer it is as forged as its X-Forwarded-For. (Rewrite has
		// removed Forwarded already, from every peer.)
		delete(out.Header, "X-Real-Ip")
	}
	if st.trusted {
		if v := in.Get("X-Forwarded-Proto"); strings.EqualFold(v, "http") || strings.EqualFold(v, "https") {
			out.Header.Set("X-Forwarded-Proto", strings.ToLower(v))
		}
		if v := in.Get("X-Forwarded-Host"); v != "" {
			out.Header.Set("X-Forwarded-Host", v)
		}
	}
	out.Header[headerRequestID] = st.idHeader[:]

	if len(r.reqT) > 0 {
		if f := st.transformRequest(out); f != nil {
			st.reqFailure = f
			pr.Out = out.WithContext(abortedContext)
			return
		}
	}
	// The backend's opening gate gives up a dial when the request that asked for
	// it ends (opening.go).
	ctx := withRequestDone(out.Context())
	if len(r.respT) > 0 {
		ctx = context.WithValue(ctx, stateKey{}, st)
	}
	if (st.body.buffered && !st.retried) || st.resend != nil {
		// A body in memory can be sent again if the connection is lost before
		// the answer begins, and so can a request whose plugin asked for it
		// (Exchange.ResendOnFailure): know when it does.
		st.answering.Store(false)
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { st.answering.Store(true) }})
	}
	pr.Out = out.WithContext(ctx)
}

// modifyResponse puts the request id on a 101 response (the others get it from
// the recorder, but an upgrade response is written by the proxy itself on the
// hijacked connection) and runs the response transformers.
func (r *Route) modifyResponse(res *http.Response) error {
	if res.StatusCode == http.StatusSwitchingProtocols && res.Request != nil {
		if id := res.Request.Header[headerRequestID]; len(id) > 0 {
			res.Header[headerRequestID] = id
		}
	}
	if len(r.respT) == 0 || res.Request == nil {
		return nil
	}
	st, ok := res.Request.Context().Value(stateKey{}).(*state)
	if !ok {
		return nil
	}
	return st.transformResponse(res)
}

// errorHandler answers for a failed proxying: a plugin failure (500 or 502), the
// client gone (nothing), a request sent again as its plugin asked, a dial failure
// kept for the DialFailureHandlers, or the backend's failure (502 or 504).
func (r *Route) errorHandler(w http.ResponseWriter, _ *http.Request, err error) {
	rec, ok := w.(*recorder)
	if !ok {
		http.Error(w, msgInternal, http.StatusInternalServerError)
		return
	}
	st := rec.st
	var pf *pluginFailure
	switch {
	case rec.wrote || rec.hijacked:
		// Too late to answer: the response (or the upgrade) has begun.
		st.logger().Debug("proxy error after the response began", "error", err)
	case st.reqFailure != nil:
		st.logger().Error("plugin failed", "plugin", st.reqFailure.inst.kind, "error", st.reqFailure)
		st.writeError(http.StatusInternalServerError, msgPluginFailed(st.reqFailure.inst.kind))
	case errors.As(err, &pf):
		st.logger().Error("plugin failed", "plugin", pf.inst.kind, "error", pf)
		st.writeError(http.StatusBadGateway, msgPluginFailed(pf.inst.kind))
	case st.ex.Context().Err() != nil:
		// The client is gone (or the server gave up on it): nobody to answer;
		// the access line says 499.
		st.logger().Debug("client gone before the backend answered", "error", err)
	case st.resendAsked(err):
		// The request's plugin asked for it to be sent again (resend.go).
	case isDialFailure(err) && len(r.dial) > 0 && !st.retried && st.body.n.Load() == 0:
		st.dialErr = err // the gateway asks the route's DialFailureHandlers
	case !st.retried && !st.answering.Load() && connectionLost(err) && st.body.rewind():
		st.lostErr = err // the gateway sends it again on a new connection
	default:
		st.proxyError(err)
	}
}

// proxyError answers for a backend that failed: 504 for timeouts, 502 otherwise.
func (st *state) proxyError(err error) {
	status, msg := classifyProxyError(err)
	st.logger().Warn("backend failed", "upstream", st.upstream, "status", status, "error", err)
	st.writeError(status, msg)
}

// classifyProxyError maps a transport error to the gateway's answer.
func classifyProxyError(err error) (status int, msg string) {
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
	switch {
	case timeout:
		return http.StatusGatewayTimeout, msgTimeout
	case isDialFailure(err):
		return http.StatusBadGateway, msgUnreachable
	}
	return http.StatusBadGateway, msgBadResponse
}

// connectionLost reports whether err says the backend's connection broke (reset,
// closed, broken pipe) rather than timed out or answered badly.
func connectionLost(err error) bool {
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	// net/http's own error for a connection the server closed as it was reused.
	return strings.Contains(err.Error(), "server closed idle connection")
}

// isDialFailure reports whether err says the connection to the backend never
// opened (refused, unreachable, name not found, dial timeout): the backend cannot
// have seen the request.
func isDialFailure(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Package plugin is reaper's gateway core: routes matched on host and path, a chain
// of plugins run in Otoroshi's steps (pre-route, validate access, transform request,
// transform response), a registry of plugin kinds, and the streaming reverse proxy
// that sends the request to the route's backend.
//
// A plugin kind registers an Info (an id and a constructor). Each route lists the
// plugins it uses; each listed plugin becomes one instance whose YAML config is
// decoded strictly into the instance (a struct with yaml tags), then validated
// (conf.Validator), then provisioned (Provisioner). An instance takes part in the
// steps whose interfaces it implements.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"
)

// Plugin is one configured instance of a plugin kind on one route. It implements any
// of the step interfaces (PreRouter, AccessValidator, RequestTransformer,
// ResponseTransformer, DialFailureHandler) and, optionally, conf.Validator,
// Provisioner and CleanerUpper.
type Plugin any

// PreRouter runs first for every request of the route. It may answer at once.
type PreRouter interface {
	PreRoute(ex *Exchange) (*Answer, error)
}

// AccessValidator decides whether the request may reach the backend. It may block
// until ex.Context() ends (the reaper plugin holds requests here while an app
// wakes), or park the request instead of blocking (Exchange.Park, then ErrParked),
// but it must not read the request body itself (Exchange.BufferBody reads a small
// one in a way the proxy can still send). A nil Answer lets the request go
// on; a non-nil Answer is written to the client and ends the chain: a denial is an
// Answer, not an error. An error means a technical failure: the gateway answers 500
// and logs it.
type AccessValidator interface {
	ValidateAccess(ex *Exchange) (*Answer, error)
}

// RequestTransformer changes the request sent to the backend (out), after the
// gateway has set the target URL and the forwarding headers. An error answers 500.
type RequestTransformer interface {
	TransformRequest(ex *Exchange, out *http.Request) error
}

// ResponseTransformer changes the backend's response before it is streamed to the
// client (headers, status; never buffer the body). An error answers 502.
type ResponseTransformer interface {
	TransformResponse(ex *Exchange, resp *http.Response) error
}

// DialFailureHandler is consulted when the backend could not be reached at all: the
// connection was refused or could not be opened, so the backend never saw the
// request and no byte of its body was read. It may block (the reaper plugin wakes a
// process that died and waits for it), or park the request (Exchange.Park, then
// DialParked): it is then called again, with the same error, when the request is
// resumed. The answer is used only with DialAnswer.
type DialFailureHandler interface {
	HandleDialFailure(ex *Exchange, err error) (DialAction, *Answer)
}

// DialAction is what a DialFailureHandler decided for a request whose backend
// could not be reached.
type DialAction uint8

const (
	// DialPass leaves the request to the route's next DialFailureHandler, or to
	// the usual 502 when none decides.
	DialPass DialAction = iota
	// DialRetry sends the request once more (at most once per request).
	DialRetry
	// DialAnswer gives the handler's Answer to the client.
	DialAnswer
	// DialParked says the handler parked the request (Exchange.Park).
	DialParked
)

// Provisioner is implemented by plugins that need more than their decoded config:
// a shared service, a logger, a background resource. Provision runs after the
// config was decoded and validated, when the routes are built for serving (not by
// `reaper check`). An error aborts the build; instances already provisioned are
// cleaned up.
type Provisioner interface {
	Provision(ctx ProvisionContext) error
}

// CleanerUpper is implemented by plugins that hold resources. Cleanup runs once,
// when the routes that own the instance are replaced (reload) or the gateway stops,
// after the new routes are in place; requests already using the instance may still
// be running.
type CleanerUpper interface {
	Cleanup() error
}

// ProvisionContext is what a plugin instance can reach while it is provisioned.
type ProvisionContext struct {
	Context context.Context
	Logger  *slog.Logger // carries the route id and plugin id
	// Route is the configuration of the route the instance belongs to.
	Route *RouteConfig
	// Path is the field path of the instance's config, for error messages
	// (routes[2].plugins[0].config).
	Path string
	// Services holds shared services wired by the binary, by name (the reaper
	// plugin finds its engine under "reaper").
	Services map[string]any
	// DropIdleConnections closes the idle keep-alive connections to the route's
	// targets (Route.DropIdleConnections). Safe to call at any time, from any
	// goroutine, also once the route is built and serving; nil outside
	// BuildRouter.
	DropIdleConnections func()
}

// Service returns the shared service registered under name.
func (c ProvisionContext) Service(name string) (any, bool) {
	s, ok := c.Services[name]
	return s, ok
}

// Exchange is one request travelling through a route. Plugins read it; they change
// what is sent to the backend through RequestTransformer, not by editing Request.
type Exchange struct {
	// Request is the request as the gateway received it.
	Request *http.Request
	// ID is the request id: the X-Request-Id of a trusted proxy
	// (node.trusted_proxies) when it is a sane token, otherwise a new UUIDv7 (the
	// id another client sent is only logged, as client_request_id). It is sent
	// to the backend and back to the client.
	ID string
	// Route is the matched route.
	Route *Route
	// ClientIP is the client's address: the connection's peer, or, when that peer is
	// a trusted proxy, the first untrusted address of X-Forwarded-For read from the
	// right.
	ClientIP netip.Addr
	// Start is when the gateway began handling the request.
	Start time.Time
	// Logger carries the request id and route id.
	Logger *slog.Logger
	// Class and Outcome label the request for the gateway's Observer (metrics):
	// what kind of request a plugin took it for, and how it was answered when
	// not simply proxied. Plugins set them to constant strings; empty means
	// unknown (Class) or proxied, or the gateway's own error (Outcome).
	Class, Outcome string

	values map[any]any
	done   []func()
	body   *reqBody // the request body as the gateway wraps it; nil outside the gateway
	st     *state   // the gateway's state of the request; nil outside the gateway
}

// Context is the request's context: it ends when the client goes away or the
// gateway gives up on the request.
func (ex *Exchange) Context() context.Context { return ex.Request.Context() }

// PathPrefix is the path prefix of the route's domain that the request matched
// ("/app" for a domain "example.com/app"), without a trailing slash; empty for
// a domain without a path, and outside the gateway.
func (ex *Exchange) PathPrefix() string {
	if ex.st == nil {
		return ""
	}
	return ex.st.prefix
}

// OnDone registers f to run once the exchange is over: the response fully written
// (streamed bodies included) or the upgraded connection (WebSocket) closed, or the
// request abandoned. Functions run in reverse order of registration, on the
// request's goroutine. Read clocks inside f, not when registering it.
func (ex *Exchange) OnDone(f func()) { ex.done = append(ex.done, f) }

// SetValue stores a value for later steps of the same request.
func (ex *Exchange) SetValue(key, value any) {
	if ex.values == nil {
		ex.values = make(map[any]any)
	}
	ex.values[key] = value
}

// Value returns a value stored with SetValue, or nil.
func (ex *Exchange) Value(key any) any { return ex.values[key] }

// BufferBody reads the request body into memory if it holds at most limit bytes,
// so that the request can be held without its body: the HTTP/1 server watches a
// connection for the client going away only once the request body is read, and a
// request held with its body unread would reach the app after its client gave up
// (a POST executed twice when the client retries). The body is delivered intact
// either way, and a request whose body could not be read entirely (larger than
// limit, or no body at all) reports false and streams what is left when it is
// forwarded. An error means the client failed while sending its body.
func (ex *Exchange) BufferBody(limit int64) (bool, error) {
	b := ex.body
	r := ex.Request
	if b != nil && b.buffered {
		return true, nil
	}
	if b == nil || b.rc == nil || b.rc == http.NoBody || r.ContentLength == 0 || r.ContentLength > limit {
		return false, nil
	}
	if b.n.Load() > 0 {
		return false, errors.New("plugin: the request body was already read")
	}
	data, err := io.ReadAll(io.LimitReader(clientReader{b}, limit+1))
	if err != nil {
		return false, err
	}
	orig := b.rc
	if int64(len(data)) > limit { // a chunked body longer than limit: keep its head
		b.rc = bodyCloser{Reader: io.MultiReader(bytes.NewReader(data), orig), Closer: orig}
		return false, nil
	}
	b.rc = bodyCloser{Reader: bytes.NewReader(data), Closer: orig}
	b.buffered, b.data, b.orig = true, data, orig
	return true, nil
}

// SetReadDeadline bounds the reads of the request body from now on (the zero time
// removes the bound), as http.ResponseController.SetReadDeadline does: a read past
// it fails with an error matching os.ErrDeadlineExceeded. The gateway's body idle
// timeout still applies before it (GatewayOptions.BodyIdleTimeout). It returns
// http.ErrNotSupported outside the gateway or once the request is parked.
func (ex *Exchange) SetReadDeadline(t time.Time) error {
	if ex.st == nil || ex.st.rec.w == nil {
		return http.ErrNotSupported
	}
	return ex.st.body.setUntil(t)
}

// bodyCloser is a replaced body that still closes the client's.
type bodyCloser struct {
	io.Reader
	io.Closer
}

// Status is the status of the answer written to the client so far: 0 before its
// header (in an OnDone function, 0 means the request ended with no answer). It is
// 0 outside the gateway.
func (ex *Exchange) Status() int {
	if ex.st == nil {
		return 0
	}
	return ex.st.rec.status
}

// Finish runs the OnDone functions; the gateway calls it once per exchange.
func (ex *Exchange) Finish() {
	for i := len(ex.done) - 1; i >= 0; i-- {
		ex.done[i]()
	}
	ex.done = nil
}

// Answer is a response the gateway gives itself instead of the backend's.
type Answer struct {
	Status int
	Header http.Header // may be nil
	Body   []byte
	// Stream, when set, writes the body in place of Body, for an answer that
	// goes on (server-sent events): the gateway writes the status and header
	// without a Content-Length, flushes them, then calls Stream on the
	// request's goroutine with the client's writer and a flush that pushes what
	// was written to the client. The answer ends when Stream returns, which it
	// must do once the request's context ends (the client went away) or a
	// write fails. It is not called for a HEAD request.
	Stream func(w io.Writer, flush func() error)
}

// JSONAnswer returns an Answer with v encoded as JSON.
func JSONAnswer(status int, v any) *Answer {
	body, err := json.Marshal(v)
	if err != nil {
		// Only programming errors (unsupported types) get here.
		panic("plugin: JSONAnswer: " + err.Error())
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return &Answer{Status: status, Header: h, Body: append(body, '\n')}
}

package plugin

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// GatewayOptions configure a Gateway.
type GatewayOptions struct {
	// Logger receives the access lines (Info, message "access") and the gateway's
	// own errors. Nil discards.
	Logger *slog.Logger
	// Node is this node's id, added to every line of Logger.
	Node string
	// TrustedProxies are the peers whose X-Forwarded-For and X-Forwarded-Proto
	// (and X-Forwarded-Host) the gateway believes: for the client address, and to
	// keep the forwarding chain sent to backends.
	TrustedProxies []netip.Prefix
	// Observer, when set, sees every request once it is over (metrics). It runs
	// on the request's goroutine: it must be quick and must not block.
	Observer RequestObserver
	// BodyIdleTimeout bounds each wait for the next bytes of a client's request
	// body (bodytimeout.go): a client silent for longer is disconnected. 0: no
	// bound.
	BodyIdleTimeout time.Duration
	// AccessOnly runs the matched route's pre-route and access steps and never
	// proxies: a request every step lets through gets an empty 200 carrying
	// HeaderAccessAllowed (the forward-auth listener, package forwardauth,
	// asks this way on behalf of another proxy, which forwards the request
	// itself). Its requests are never parked.
	AccessOnly bool
}

// HeaderAccessAllowed marks the 200 of an AccessOnly gateway that let the request
// through, apart from any 200 a plugin answered in the app's place.
const HeaderAccessAllowed = "Reaper-Access"

// RequestObserver sees each request once it is over.
type RequestObserver interface {
	ObserveRequest(RequestDone)
}

// RequestDone is a request that is over, as an Observer sees it.
type RequestDone struct {
	Route          string // the route's id, "" when none matched
	Class, Outcome string // Exchange.Class and Exchange.Outcome
	// Status is what the access log says: 499 when the client went away first,
	// 101 for an upgrade.
	Status int
	// ByGateway: the gateway (or a plugin) answered, not a backend.
	ByGateway bool
	Duration  time.Duration
}

// Gateway is the http.Handler of the gateway listener: it matches the request to a
// route of the current Router, runs the route's plugin chain and proxies the
// request to the route's backend. Safe for concurrent use.
type Gateway struct {
	router   atomic.Pointer[Router]
	log      *slog.Logger
	trusted  []netip.Prefix
	observer RequestObserver
	bodyIdle time.Duration
	access   bool // GatewayOptions.AccessOnly

	parking  atomic.Pointer[connQueue] // nil until EnableParking
	parkN    atomic.Int64              // requests parked, or in a step that may park them
	draining atomic.Bool               // Drain was called
	parkMu   sync.Mutex
	parkIdle chan struct{} // closed when parkN drops to 0 while draining
}

// NewGateway returns a gateway without routes (every request gets a 404) until
// Swap gives it a Router.
func NewGateway(opts GatewayOptions) *Gateway {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Node != "" {
		log = log.With("node", opts.Node)
	}
	return &Gateway{log: log, trusted: opts.TrustedProxies, observer: opts.Observer, bodyIdle: opts.BodyIdleTimeout, access: opts.AccessOnly}
}

// Swap makes r the router of new requests and returns the previous one (nil the
// first time). It never blocks requests: those already matched finish on the old
// router. The caller closes old (Router.Close) when it wants its plugins cleaned
// up.
func (g *Gateway) Swap(r *Router) (old *Router) { return g.router.Swap(r) }

// Router returns the current router, or nil.
func (g *Gateway) Router() *Router { return g.router.Load() }

// headerRequestID is the canonical form of X-Request-Id.
const headerRequestID = "X-Request-Id"

// state is everything about one request, in one allocation.
type state struct {
	ex       Exchange
	g        *Gateway
	rec      recorder
	body     reqBody
	lh       exchangeHandler
	lg       slog.Logger // ex.Logger, over lh: part of the state, not an allocation of its own
	idHeader [1]string
	// doneBuf holds the first OnDone functions (the reaper plugin's traffic
	// count registers one on every request): no slice to allocate for them.
	doneBuf [2]func()

	path        string // the request path, dot segments resolved
	pathChanged bool
	prefix      string // the matched domain's path prefix
	trusted     bool   // the peer is a trusted proxy
	clientID    string // the X-Request-Id of a client not trusted, for the access log
	upstream    string // target used, or "gateway"

	// Which plugins apply to this request's path (include/exclude), computed on
	// first need: bit i of computed says bit i of applies is known.
	applies, computed uint64

	step        int     // index of the access step (or DialFailureHandler) running, or -1
	dialing     bool    // step indexes the route's DialFailureHandlers
	dialFailure error   // the dial failure they are asked about
	parked      *Parked // set by Exchange.Park
	clientGone  bool    // the client hung up while its request was parked

	reqFailure *pluginFailure // a request transformer failed (set in Rewrite)
	dialErr    error          // a dial failure left for the DialFailureHandlers
	lostErr    error          // a connection lost before any byte of the answer, body in memory
	answering  atomic.Bool    // the backend's answer began (its first byte arrived)
	retried    bool

	// Sending again after a failed attempt, as a plugin asked (resend.go).
	resend     func(SendFailure) (time.Duration, bool)
	resendErr  error         // the failed attempt, when the request is to be sent again
	resendWait time.Duration // how long to wait before
	attempts   int           // failed attempts the resend function was asked about
}

// ServeHTTP handles one request. It blocks until the response is written, the
// upgraded connection is closed, or the client is gone.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if p := g.resumed(req); p != nil {
		g.resume(p, w, req)
		return
	}
	st := &state{g: g, step: -1}
	st.ex.st = st
	st.ex.Start = time.Now()
	st.ex.Request = req
	st.ex.done = st.doneBuf[:0]
	peer := peerAddr(req.RemoteAddr)
	st.ex.ClientIP = peer
	if len(g.trusted) > 0 && inPrefixes(g.trusted, peer) {
		st.trusted = true
		st.ex.ClientIP = clientFromXFF(req.Header["X-Forwarded-For"], peer, g.trusted)
	}
	st.ex.ID, st.clientID = requestIDs(req.Header[headerRequestID], st.trusted)
	st.idHeader[0] = st.ex.ID
	st.rec.w, st.rec.st = w, st
	st.body.rc, st.body.st = req.Body, st
	req.Body = &st.body
	st.ex.body = &st.body
	defer g.end(st)

	refuseH2C(req.Header)
	st.path, st.pathChanged = requestPath(req.URL.Path)

	rt := g.router.Load()
	var c candidate
	ok := false
	if rt != nil {
		c, ok = rt.table.match(requestHost(req.Host), st.path, req)
	}
	if !ok {
		st.writeError(http.StatusNotFound, msgNoRoute)
		return
	}
	r := c.route
	st.ex.Route, st.prefix = r, c.prefix
	if len(r.plugins) > 0 {
		st.logger() // plugins read ex.Logger
		if !st.runChain() {
			return
		}
	}
	if g.access {
		st.allow()
		return
	}
	st.forward()
}

// allow answers a request of an AccessOnly gateway that its route's steps let
// through: the proxy that asked sends it on itself.
func (st *state) allow() {
	st.upstream = upstreamNone
	// writeBody(200, nil) without its two header slices: every auth call for an
	// awake app comes here. The values are shared, never written to: Set
	// replaces a value, Add appends past a full slice, net/http only reads them.
	h := st.rec.Header()
	h[HeaderAccessAllowed] = AllowValue
	h["Content-Length"] = zeroLength
	st.rec.WriteHeader(http.StatusOK)
}

// Shared header values of allow. AllowValue is HeaderAccessAllowed's value,
// for a listener that answers the go-ahead itself (forwardauth): shared,
// never written to.
var (
	AllowValue = []string{"allow"}
	zeroLength = []string{"0"}
)

// upstreamNone is the access log's upstream for a request an AccessOnly gateway
// let through: no target was tried here.
const upstreamNone = "none"

// logger returns the request's logger (Exchange.Logger), creating it on first
// use: a plugin-free request that logs nothing does not pay for it.
func (st *state) logger() *slog.Logger {
	if st.ex.Logger == nil {
		base := st.g.log
		if st.ex.Route != nil {
			base = st.ex.Route.logger
		}
		st.lh = exchangeHandler{h: base.Handler(), id: st.ex.ID}
		st.lg = *slog.New(&st.lh)
		st.ex.Logger = &st.lg
	}
	return st.ex.Logger
}

// runChain runs the pre-route and access steps; false means the request was
// answered (or abandoned) and goes no further.
func (st *state) runChain() bool {
	r := st.ex.Route
	for _, inst := range r.pre {
		if st.appliesTo(inst) {
			a, err := callStep(st, inst, stepPreRoute)
			if !st.stepDone(inst, a, err) {
				return false
			}
		}
	}
	return st.runAccess(0)
}

// runAccess runs the access steps from the one at index from; false means the
// request was answered, abandoned or parked.
func (st *state) runAccess(from int) bool {
	access := st.ex.Route.access
	for i := from; i < len(access); i++ {
		inst := access[i]
		if st.appliesTo(inst) {
			st.step = i
			counted := st.stepMayPark()
			a, err := callStep(st, inst, stepValidateAccess)
			st.step = -1
			st.stepDidNotPark(counted)
			if !st.stepDone(inst, a, err) {
				return false
			}
		}
	}
	return true
}

// stepDone handles a step's result; false means stop.
func (st *state) stepDone(inst *instance, a *Answer, err error) bool {
	if !st.parkedAsSaid(inst, err == ErrParked) {
		return false
	}
	switch {
	case st.ex.Context().Err() != nil:
		return false // the client is gone: nobody to answer
	case err != nil:
		st.logger().Error("plugin failed", "plugin", inst.kind, "error", err)
		st.writeError(http.StatusInternalServerError, msgPluginFailed(inst.kind))
		return false
	case a != nil:
		st.writeAnswer(inst, a)
		return false
	}
	return true
}

// parkedAsSaid checks a step's word about parking against what it did: it
// returns false when the request is parked (the gateway arms the watch when the
// handler returns), or when the plugin took the connection over without saying
// so — nobody can answer the request any more.
func (st *state) parkedAsSaid(inst *instance, said bool) bool {
	if st.parked == nil {
		return true
	}
	if said {
		return false
	}
	st.logger().Error("plugin parked the request but did not say so", "plugin", inst.kind)
	st.parked.conn.Close()
	st.parked = nil
	st.g.parkedAdd(-1)
	st.clientGone = true
	return false
}

// appliesTo reports whether inst runs for this request (include/exclude).
func (st *state) appliesTo(inst *instance) bool {
	if st.ex.Route.filtered&inst.bit == 0 {
		return true
	}
	if st.computed&inst.bit == 0 {
		st.computed |= inst.bit
		if inst.appliesTo(st.path) {
			st.applies |= inst.bit
		}
	}
	return st.applies&inst.bit != 0
}

// forward proxies the request. After a dial failure it asks the route's
// DialFailureHandlers whether to send it once more; a request whose connection
// was lost before any byte of the answer, and whose body is in memory, is sent
// once more at once, on a new connection; a request whose plugin asked for it
// (Exchange.ResendOnFailure) is sent again for as long as its plugin says.
func (st *state) forward() {
	st.ex.Route.proxy.ServeHTTP(&st.rec, st.ex.Request)
	st.sendAgain()
}

// sendAgain sends the request again, on a new connection, for as long as its
// last attempt failed in a way that asks for it (see forward).
func (st *state) sendAgain() {
	r := st.ex.Route
	for {
		switch {
		case st.resendErr != nil:
			err := st.resendErr
			st.resendErr = nil
			st.logger().Debug("the backend's connection failed before it answered; sending the request again", "upstream", st.upstream, "attempt", st.attempts+1, "after", st.resendWait, "error", err)
			if !st.waitToResend(st.resendWait) {
				return // the client is gone: nobody to answer
			}
			r.freshProxy.ServeHTTP(&st.rec, st.ex.Request)
		case st.lostErr != nil:
			st.logger().Debug("the backend's connection was lost before it answered; sending the request again on a new connection", "upstream", st.upstream, "error", st.lostErr)
			st.lostErr, st.retried = nil, true
			r.freshProxy.ServeHTTP(&st.rec, st.ex.Request)
		case st.dialErr != nil:
			err := st.dialErr
			st.dialErr = nil
			st.dialFailed(0, err)
		default:
			return
		}
	}
}

// dialFailed asks the route's DialFailureHandlers, from the one at index from,
// what to do after the backend could not be reached: answer, send the request once
// more, or (none deciding) the usual 502. A handler may park the request: it is
// then asked again when the request is resumed.
func (st *state) dialFailed(from int, err error) {
	r := st.ex.Route
	for i := from; i < len(r.dial); i++ {
		inst := r.dial[i]
		if !st.appliesTo(inst) {
			continue
		}
		st.step, st.dialing, st.dialFailure = i, true, err
		counted := st.stepMayPark()
		act, a := callDial(st, inst, err)
		st.step, st.dialing = -1, false
		st.stepDidNotPark(counted)
		if !st.parkedAsSaid(inst, act == DialParked) || st.ex.Context().Err() != nil {
			return // parked (the gateway arms the watch when the handler returns), or nobody to answer
		}
		switch act {
		case DialParked:
			st.logger().Error("plugin said it parked the request but did not", "plugin", inst.kind)
		case DialAnswer:
			if a != nil {
				st.writeAnswer(inst, a)
				return
			}
			st.logger().Error("plugin answered a dial failure without an answer", "plugin", inst.kind)
		case DialRetry:
			st.retried = true
			r.proxy.ServeHTTP(&st.rec, st.ex.Request)
			return
		}
	}
	st.retried = true
	st.proxyError(err)
}

// end runs when the handler returns or panics: it recovers panics, runs the
// exchange's OnDone functions, closes the request body and writes the access
// line. http.ErrAbortHandler (a backend that failed mid-body) is re-raised so
// that the server aborts the client connection instead of ending the response
// cleanly.
func (g *Gateway) end(st *state) {
	v := recover()
	st.body.endDeadline(false)
	if st.parked != nil {
		if v == nil {
			st.parked.arm() // from here on, other goroutines own the exchange
			return
		}
		st.parked.conn.Close()
		st.parked = nil
		st.g.parkedAdd(-1)
		st.clientGone = true
	}
	abort := v == http.ErrAbortHandler
	// Nothing was written and the request's context ended (the client left, or
	// the server gave up reading its body): the connection is closed, rather
	// than left to the server, which would answer an empty 200 on it.
	if v == nil && !st.rec.wrote && !st.rec.hijacked && !st.clientGone && st.ex.Request.Context().Err() != nil {
		abort = true
	}
	if v != nil && !abort {
		g.log.Error("request handling panicked", "request_id", st.ex.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if !st.rec.wrote && !st.rec.hijacked && !st.clientGone {
			st.writeError(http.StatusInternalServerError, msgInternal)
		}
	}
	st.finish()
	st.body.close()
	g.done(st, abort)
	if abort {
		panic(http.ErrAbortHandler)
	}
}

// finish runs the OnDone functions, each protected from the others' panics.
func (st *state) finish() {
	defer func() {
		if v := recover(); v != nil {
			st.g.log.Error("an OnDone function panicked", "request_id", st.ex.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			st.finish() // the rest of them
		}
	}()
	for len(st.ex.done) > 0 {
		f := st.ex.done[len(st.ex.done)-1]
		st.ex.done = st.ex.done[:len(st.ex.done)-1]
		f()
	}
}

// statusClientGone is the access log's status when the client went away before
// the response was complete (nginx's convention).
const statusClientGone = 499

// done tells the observer and the access log that the request is over.
func (g *Gateway) done(st *state, aborted bool) {
	status := st.finalStatus(aborted)
	route := ""
	if st.ex.Route != nil {
		route = st.ex.Route.ID
	}
	if g.observer != nil {
		g.observer.ObserveRequest(RequestDone{Route: route, Class: st.ex.Class, Outcome: st.ex.Outcome, Status: status,
			ByGateway: st.upstream == "" || st.upstream == upstreamGateway || st.upstream == upstreamNone, Duration: time.Since(st.ex.Start)})
	}
	g.logAccess(st, route, status)
}

// finalStatus is the status a request ended with, as the access log says it.
func (st *state) finalStatus(aborted bool) int {
	req := st.ex.Request
	switch {
	case st.rec.hijacked:
		return http.StatusSwitchingProtocols
	case st.clientGone && !st.rec.wrote, req.Context().Err() != nil && (!st.rec.wrote || aborted):
		return statusClientGone
	case !st.rec.wrote:
		return http.StatusOK // what the server sends for a handler that wrote nothing
	}
	return st.rec.status
}

// logAccess writes the request's access line (LogAccess).
func (g *Gateway) logAccess(st *state, route string, status int) {
	req, now := st.ex.Request, time.Now()
	LogAccess(g.log, now, AccessLine{
		RequestID: st.ex.ID, Route: route, Method: req.Method, Host: req.Host, Path: req.URL.Path,
		Status: status, Bytes: st.rec.bytes.Load(), Duration: now.Sub(st.ex.Start),
		Upstream: cmp.Or(st.upstream, upstreamGateway), // no target tried: the gateway answered
		Client:   st.ex.ClientIP, ClientRequestID: st.clientID,
	})
}

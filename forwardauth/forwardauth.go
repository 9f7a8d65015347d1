// Package forwardauth is the forward-auth listener (node.auth_listen): a proxy
// the user already runs (Caddy's forward_auth, Traefik's forwardAuth, nginx's
// auth_request, Envoy's ext_authz) asks it before each request whether the
// request may go to its app. It rebuilds the original request from the
// X-Forwarded-* headers and runs the matched route's access steps — the reaper
// plugin's classification, monitoring filters, waiting page, hold or unavailable
// answer — on a gateway that never proxies (plugin.GatewayOptions.AccessOnly),
// so the answers are the gateway's own, from the same code.
//
// It never reaches the engine itself: the access gateway runs the router the
// gateway runs, the same plugin instances, so the reaper plugin of a route
// holds, counts and asks for wakes through that route's one claim on its app
// (the port, reaper.Route, as a TCP route does), behind the route's own access
// steps (authentication first: an anonymous request wakes nothing).
//
// Files: forwardauth.go (the listener, the original request, /auth and
// /auth/nginx), recorder.go (what the gateway writes; nginx's kept answers),
// envoy.go (/auth/envoy/…: Envoy's request line, its 5xx as a 429),
// holdctx.go (auth_hold_max's deadline, timed only for a call that waits),
// traefik.go (/traefik, Traefik's HTTP provider).
package forwardauth

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// Paths served on the listener.
const (
	// PathAuth answers as Traefik's forwardAuth, Caddy's forward_auth and Envoy's
	// ext_authz expect: 200 lets the request go, anything else is the answer the
	// proxy gives its client.
	PathAuth = "/auth"
	// PathNginx answers as nginx's auth_request needs (it passes only 2xx, 401
	// and 403): 200 lets the request go; 401 carries the answer's status
	// (HeaderAnswerStatus) and where nginx fetches it (HeaderAnswer).
	PathNginx = "/auth/nginx"
	// PathEnvoy is the path_prefix Envoy's HTTP ext_authz asks under: the
	// original method and path come as the auth call's own, after the prefix,
	// and the original host as its Host (envoy.go).
	PathEnvoy = "/auth/envoy"
	// pathAnswer is where a stored answer is fetched once: pathAnswer + its id.
	pathAnswer = "/auth/answer/"
)

// mode is how a proxy asks and what it relays.
type mode int

const (
	modeRelay mode = iota // Caddy, Traefik: X-Forwarded-*, every answer relayed
	modeNginx             // auth_request: 2xx, 401 and 403 only
	modeEnvoy             // ext_authz: the request line; 5xx becomes an empty 403
)

// Headers of a /auth/nginx refusal.
const (
	HeaderAnswerStatus = "Reaper-Answer-Status"
	HeaderAnswer       = "Reaper-Answer"
)

// DefaultHoldMax is node.auth_hold_max's default: under Traefik's forwardAuth
// client timeout (30 s, which it turns into a 500).
const DefaultHoldMax = 25 * time.Second

// Options configure a Server.
type Options struct {
	// Trusted are the peers allowed to ask; others get 403. Empty: loopback only.
	Trusted []netip.Prefix
	// HoldMax bounds how long one auth call is held while its app wakes (the
	// route's fail_timeout bounds it too). 0: DefaultHoldMax.
	HoldMax time.Duration
	Logger  *slog.Logger
	// Routes returns the routes in force, for PathTraefik; TraefikRoutes are
	// the ids of those it gives Traefik (opt-in), and AuthURL the listener's
	// URL as Traefik reaches it.
	Routes        func() []*plugin.Route
	TraefikRoutes []string
	AuthURL       string
	// TraefikLabeled, when set, returns the ids of the routes whose apps ask
	// for Traefik themselves (a container's reaper.traefik label), given too.
	// Asked at each PathTraefik call: it must not wait on the platform.
	TraefikLabeled func() []string
}

// Server is the forward-auth listener's handler.
type Server struct {
	access  http.Handler // a plugin.Gateway with AccessOnly
	trusted []netip.Prefix
	holdMax time.Duration
	log     *slog.Logger
	answers *answerStore

	routes         func() []*plugin.Route
	traefikRoutes  map[string]bool
	traefikLabeled func() []string
	authURL        string
}

// New returns the handler; access runs the routes' access steps without
// proxying (a plugin.Gateway built with AccessOnly).
func New(access http.Handler, opts Options) *Server {
	s := &Server{access: access, trusted: opts.Trusted, holdMax: opts.HoldMax, log: opts.Logger, answers: newAnswerStore(),
		routes: opts.Routes, traefikRoutes: map[string]bool{}, traefikLabeled: opts.TraefikLabeled, authURL: opts.AuthURL}
	for _, id := range opts.TraefikRoutes {
		s.traefikRoutes[id] = true
	}
	if len(s.trusted) == 0 {
		s.trusted = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	if s.holdMax <= 0 {
		s.holdMax = DefaultHoldMax
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// ServeHTTP answers the proxies' auth calls.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.isTrusted(r.RemoteAddr) {
		http.Error(w, "forbidden: this address is not in node.auth_trusted_proxies", http.StatusForbidden)
		return
	}
	switch {
	case r.URL.Path == PathAuth:
		s.auth(w, r, modeRelay)
	case r.URL.Path == PathNginx:
		s.auth(w, r, modeNginx)
	case r.URL.Path == PathEnvoy || strings.HasPrefix(r.URL.Path, PathEnvoy+"/"):
		s.auth(w, r, modeEnvoy)
	case r.URL.Path == PathTraefik:
		s.serveTraefik(w)
	case strings.HasPrefix(r.URL.Path, pathAnswer):
		s.serveAnswer(w, strings.TrimPrefix(r.URL.Path, pathAnswer))
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) isTrusted(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range s.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// auth runs the access steps for the forwarded request. nginx turns every
// refusal into a 401 whose answer is stored for nginx to fetch; Envoy gets
// every refusal as a status it relays (envoy.go).
func (s *Server) auth(w http.ResponseWriter, r *http.Request, m mode) {
	c := &authCall{}
	c.ctx.init(r.Context(), s.holdMax)
	ctx, rec := &c.ctx, &c.rec
	defer ctx.release()
	orig, err := original(ctx, r, m == modeEnvoy)
	if err != nil {
		http.Error(w, "bad forwarded request: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec.init(w, m == modeRelay)
	if s.run(rec, orig) {
		// The hold reached auth_hold_max (or the proxy left): the app still
		// wakes; the client is told to come back, as the unavailable answer does.
		if r.Context().Err() != nil {
			return
		}
		rec.stillWaking()
	}
	switch {
	case m == modeRelay:
	case rec.allowed():
		w.Header()[plugin.HeaderAccessAllowed] = plugin.AllowValue // shared: no allocation per call
		w.WriteHeader(http.StatusOK)
	case m == modeEnvoy:
		answerEnvoy(w, rec.answer())
	default:
		id := s.answers.put(rec.answer())
		w.Header().Set(HeaderAnswerStatus, itoa(rec.status))
		w.Header().Set(HeaderAnswer, pathAnswer+id)
		w.WriteHeader(http.StatusUnauthorized)
	}
}

// authCall is what one auth call needs besides the request: one allocation,
// not one each.
type authCall struct {
	ctx holdContext
	rec recorder
}

// run runs the access gateway on orig; aborted reports that it gave no answer
// (its context ended: the hold was cut short).
func (s *Server) run(rec *recorder, orig *http.Request) (aborted bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			aborted = !rec.wrote
		}
	}()
	s.access.ServeHTTP(rec, orig)
	return !rec.wrote
}

// serveAnswer gives the stored answer id once, with its real status.
func (s *Server) serveAnswer(w http.ResponseWriter, id string) {
	a, ok := s.answers.take(id)
	if !ok {
		http.Error(w, "no such answer (each is served once, within a minute)", http.StatusGone)
		return
	}
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(a.status)
	w.Write(a.body) //nolint:errcheck // a proxy gone is not our error
}

// original is the request the proxy asks about, from its X-Forwarded-* headers:
// method, host, URI, scheme and client; from Envoy (fromLine), the auth call's
// own method, its path after PathEnvoy and its Host. Its other headers (Accept,
// the reaper header, User-Agent, …) are the proxy's copies of the client's. It
// is r itself, copied once for ctx and rewritten: r's header map is reused, not
// cloned (the auth call is the listener's own), so this costs one request and
// one URL.
func original(ctx context.Context, r *http.Request, fromLine bool) (*http.Request, error) {
	h := r.Header
	method, uri, host := forwarded(r)
	if fromLine {
		method, uri, host = envoyRequest(r)
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, err
	}
	for _, k := range forwardedOnly {
		delete(h, k)
	}
	o := r.WithContext(ctx)
	o.Method, o.URL, o.RequestURI, o.Host = method, u, uri, host
	o.Proto, o.ProtoMajor, o.ProtoMinor = "HTTP/1.1", 1, 1
	o.Body, o.ContentLength, o.TransferEncoding, o.Close = http.NoBody, 0, nil, false
	o.Form, o.PostForm, o.MultipartForm, o.Trailer = nil, nil, nil, nil
	return o, nil
}

// forwarded reads the original method, URI and host from X-Forwarded-*: a GET
// of / on the auth call's host when they are missing.
func forwarded(r *http.Request) (method, uri, host string) {
	method = strings.ToUpper(r.Header.Get("X-Forwarded-Method"))
	if method == "" {
		method = http.MethodGet
	}
	uri = r.Header.Get("X-Forwarded-Uri")
	if uri == "" {
		uri = "/"
	}
	host = r.Header.Get("X-Forwarded-Host")
	if host == "" {
		host = r.Host
	}
	return method, uri, host
}

// forwardedOnly are the auth call's headers that describe it, not the client's
// request: dropped from the original.
var forwardedOnly = []string{"X-Forwarded-Method", "X-Forwarded-Uri", "X-Forwarded-Host", "Content-Length", "Connection", "Upgrade"}

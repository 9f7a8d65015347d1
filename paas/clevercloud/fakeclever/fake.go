// Package fakeclever is a fake Clever Cloud: the API (on its two hosts, the bridge for
// API tokens and the API host for OAuth 1), the apps' own domains (the edge), and a
// console to act on apps from outside, as a user of the real console would.
//
// It exists because the real API cannot be reached from tests, and because the
// awkward parts of the real one (SHOULD_BE_UP lingering after a stop, SHOULD_BE_DOWN
// before a deployment begins, rate limits answered as 403, 4014 for an app never
// deployed, locks during deployments) are what a driver gets wrong. It reproduces the
// shapes described in the project's reference page of the Clever Cloud API.
//
// An app's state is computed from the time and the app's deployments each time it is
// read (state = f(now, events)), so no timer runs and every read sees one consistent
// moment. After a start the app says SHOULD_BE_DOWN for Options.DeployDelay, then
// WANTS_TO_BE_UP with a WIP DEPLOY deployment for Options.BootTime, then SHOULD_BE_UP
// with the deployment OK and an instance UP. After a stop it says SHOULD_BE_UP (an
// UNDEPLOY deployment WIP, the instance STOPPING but still answering) for
// Options.StopLinger, then SHOULD_BE_DOWN. A failed or cancelled start ends with the
// deployment FAIL or CANCELLED, WANTS_TO_BE_UP for StopLinger, then SHOULD_BE_DOWN.
// A start sent to an app that is up restarts it (the old instance serves until the
// new one is up) and is counted by Restarts. The edge answers for an app while an
// instance serves it (from Options.EdgeDelay after its start's deployment ends),
// else 404 with X-CleverCloudUpgrade: true.
//
// Assumption, since the reference gives no code for it: an app locked by another
// operation (a deployment queued or in progress) answers a start or a stop with HTTP
// 409 and a v2 error body {"id": 409, "message": "The application is locked: …"}.
package fakeclever

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Defaults used when Options leave them empty.
const (
	DefaultToken        = "fake-clever-token"
	DefaultUserID       = "user_00000000-0000-4000-8000-000000000000"
	DefaultOrganisation = "orga_00000000-0000-4000-8000-000000000000"
)

// DefaultOAuth are the OAuth 1 credentials the API host accepts when Options.OAuth
// is nil.
var DefaultOAuth = OAuthCreds{
	ConsumerKey: "fake-consumer-key", ConsumerSecret: "fake-consumer-secret",
	Token: "fake-oauth-token", Secret: "fake-oauth-secret",
}

// maxCalls bounds the calls kept for Calls and EdgeCalls (the oldest are dropped).
const maxCalls = 100_000

// OAuthCreds are OAuth 1 consumer and token credentials.
type OAuthCreds struct {
	ConsumerKey, ConsumerSecret, Token, Secret string
}

// Options configure a Fake. Zero durations are allowed (instant transitions).
type Options struct {
	// BootTime is how long a deployment runs (WANTS_TO_BE_UP, WIP).
	BootTime time.Duration
	// DeployDelay is how long an app keeps saying SHOULD_BE_DOWN after a start,
	// before its deployment begins.
	DeployDelay time.Duration
	// StopLinger is how long an app keeps saying SHOULD_BE_UP after a stop (and
	// WANTS_TO_BE_UP after a failed start).
	StopLinger time.Duration
	// EdgeDelay is how long, after a start's deployment ends, the app's domain
	// still answers 404 + X-CleverCloudUpgrade although the app says SHOULD_BE_UP.
	EdgeDelay time.Duration
	// Token is the API token the bridge host accepts (DefaultToken when empty).
	Token string
	// OAuth are the credentials the API host accepts (DefaultOAuth when nil).
	OAuth *OAuthCreds
	// UserID is the user the credentials belong to. Empty: the first user_ owner
	// given to AddApp, or DefaultUserID.
	UserID string
	// Logger receives one debug line per call; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Tests may drive transitions with it.
	Now func() time.Time
	// Listen addresses; empty means 127.0.0.1:0 (a free port).
	BridgeAddr, APIAddr, EdgeAddr, AdminAddr string
}

// Call is one request the fake answered.
type Call struct {
	Host   string // "bridge", "api", "edge" or "admin"
	Method string
	Path   string
	Query  string
	App    string // the app the path (or, on the edge, the Host) names; empty when none
	At     time.Time
	Status int    // 499 when the client went away first
	Fault  string // the fault that answered, if any
	// State is the app's state, as the API showed it, when the call arrived
	// (before the call's own effect): a start accepted while it said SHOULD_BE_UP
	// restarted the app. Empty for an API call that names no app, or an unknown one.
	State string
	// UserAgent and Accept are the request's headers of those names.
	UserAgent, Accept string
	// How the request framed its body, as the server read it: ContentLength
	// (-1 when unknown, as when chunked), TransferEncoding, the Content-Length
	// header lines as they came, and BodyBytes, the bytes of body that came.
	// Every call of the API takes no body.
	ContentLength       int64
	TransferEncoding    []string
	ContentLengthHeader []string
	BodyBytes           int64
}

// Fake is a fake Clever Cloud. Its methods are safe for concurrent use.
type Fake struct {
	opts   Options
	tm     timing
	logger *slog.Logger

	mu       sync.Mutex
	apps     map[string]*app
	order    []string          // app ids in the order they were added
	domains  map[string]string // lower-case host → app id
	faults   []*activeFault
	calls    []Call
	edge     []Call
	userID   string
	servers  []*http.Server
	appEdges map[string]string // app id → URL of its own edge listener
	urls     map[string]string // "bridge", "api", "edge", "admin" → URL
	started  bool
	closed   bool
}

// New returns a fake with no app; Start it before use.
func New(opts Options) *Fake {
	if opts.Token == "" {
		opts.Token = DefaultToken
	}
	if opts.OAuth == nil {
		c := DefaultOAuth
		opts.OAuth = &c
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Fake{
		opts: opts,
		tm: timing{deployDelay: opts.DeployDelay, bootTime: opts.BootTime, stopLinger: opts.StopLinger,
			edgeDelay: opts.EdgeDelay},
		logger:   logger,
		apps:     map[string]*app{},
		domains:  map[string]string{},
		userID:   opts.UserID,
		appEdges: map[string]string{},
		urls:     map[string]string{},
	}
}

// Start listens on the four addresses and serves them in the background. It
// returns once every listener is open. Apps added with an EdgeAddr get their own
// listener too.
func (f *Fake) Start() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return errors.New("fakeclever: already started")
	}
	f.started = true
	parts := []struct {
		name, addr string
		h          http.Handler
	}{
		{"bridge", f.opts.BridgeAddr, f.apiHandler(hostBridge)},
		{"api", f.opts.APIAddr, f.apiHandler(hostAPI)},
		{"edge", f.opts.EdgeAddr, http.HandlerFunc(f.serveEdge)},
		{"admin", f.opts.AdminAddr, f.adminHandler()},
	}
	for _, p := range parts {
		url, err := f.listenLocked(p.addr, p.h)
		if err != nil {
			f.closeLocked()
			return fmt.Errorf("fakeclever: %s listener: %w", p.name, err)
		}
		f.urls[p.name] = url
	}
	for _, id := range f.order {
		if a := f.apps[id]; a.EdgeAddr != "" {
			if err := f.listenAppEdgeLocked(a); err != nil {
				f.closeLocked()
				return err
			}
		}
	}
	return nil
}

func (f *Fake) listenLocked(addr string, h http.Handler) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	f.servers = append(f.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

func (f *Fake) listenAppEdgeLocked(a *app) error {
	id := a.ID
	url, err := f.listenLocked(a.EdgeAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.serveEdgeFor(w, r, id)
	}))
	if err != nil {
		return fmt.Errorf("fakeclever: edge listener of %s: %w", id, err)
	}
	f.appEdges[id] = url
	return nil
}

// Close stops every listener at once, cutting requests in flight. It is idempotent.
func (f *Fake) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeLocked()
}

func (f *Fake) closeLocked() {
	f.closed = true
	for _, s := range f.servers {
		_ = s.Close()
	}
	f.servers = nil
}

func (f *Fake) url(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.urls[name]
}

// BridgeURL is the base URL of the bridge host (https://api-bridge.clever-cloud.com),
// which accepts the API token as "Authorization: Bearer <token>" only.
func (f *Fake) BridgeURL() string { return f.url("bridge") }

// APIURL is the base URL of the API host (https://api.clever-cloud.com), which
// accepts OAuth 1 with a PLAINTEXT signature only (an HMAC one is refused with 401).
func (f *Fake) APIURL() string { return f.url("api") }

// EdgeURL is the base URL of the apps' domains: requests are routed by their Host
// header (app-<uuid>.cleverapps.io, or a domain given in App.VHosts or AddVHost).
func (f *Fake) EdgeURL() string { return f.url("edge") }

// AdminURL is the base URL of the control endpoints (/_fake/…), used by
// cmd/fakeclever; see the package's admin.go.
func (f *Fake) AdminURL() string { return f.url("admin") }

// AppEdgeURL is the URL of the app's own edge listener (App.EdgeAddr), which answers
// for that app whatever the Host header; empty when it has none or before Start.
func (f *Fake) AppEdgeURL(appID string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appEdges[appID]
}

// Token is the API token the bridge host accepts.
func (f *Fake) Token() string { return f.opts.Token }

// OAuth are the OAuth 1 credentials the API host accepts.
func (f *Fake) OAuth() OAuthCreds { return *f.opts.OAuth }

// UserID is the user the fake's credentials belong to.
func (f *Fake) UserID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.user()
}

func (f *Fake) user() string {
	if f.userID == "" {
		return DefaultUserID
	}
	return f.userID
}

// AddApp adds an app (or replaces the one with the same id) and returns it with its
// defaults filled in. It panics on an unknown state, on a user_ owner that is not
// the fake's user, and when the app's own edge listener cannot be opened: all are
// test mistakes.
func (f *Fake) AddApp(a App) App {
	a, err := f.addApp(a)
	if err != nil {
		panic(err.Error())
	}
	return a
}

func (f *Fake) addApp(a App) (App, error) {
	if a.ID == "" {
		a.ID = "app_" + newUUID()
	}
	if a.Owner == "" {
		a.Owner = DefaultOrganisation
	}
	if a.Name == "" {
		a.Name = a.ID
	}
	if a.State == "" {
		a.State = StateShouldBeUp
	}
	if a.Zone == "" {
		a.Zone = "par"
	}
	if a.Flavor == "" {
		a.Flavor = "XS"
	}
	if a.NeverDeployed {
		a.State = StateShouldBeDown
	}
	switch a.State {
	case StateShouldBeUp, StateShouldBeDown, StateWantsToBeUp, StateModerated, StateDefaultOfPayment:
	default:
		return a, fmt.Errorf("fakeclever: AddApp: unknown state %q", a.State)
	}
	if !strings.HasPrefix(a.Owner, "user_") && !strings.HasPrefix(a.Owner, "orga_") {
		return a, fmt.Errorf("fakeclever: AddApp: owner %q is neither orga_… nor user_…", a.Owner)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasPrefix(a.Owner, "user_") {
		if f.userID == "" {
			f.userID = a.Owner
		} else if a.Owner != f.userID {
			return a, fmt.Errorf("fakeclever: AddApp: owner %s is not the fake's user %s (one credential, one user)", a.Owner, f.userID)
		}
	}
	rec := &app{App: a}
	if a.State == StateModerated || a.State == StateDefaultOfPayment {
		rec.override = a.State
	}
	rec.seed(f.opts.Now(), f.tm)
	if _, ok := f.apps[a.ID]; !ok {
		f.order = append(f.order, a.ID)
	}
	f.apps[a.ID] = rec
	f.domains[DefaultDomain(a.ID)] = a.ID
	for _, h := range a.VHosts {
		f.domains[normHost(h)] = a.ID
	}
	if a.EdgeAddr != "" && f.started && !f.closed && f.appEdges[a.ID] == "" {
		if err := f.listenAppEdgeLocked(rec); err != nil {
			return a, err
		}
	}
	return a, nil
}

// AddVHost routes host (a domain, any case, port ignored) to the app at the edge.
func (f *Fake) AddVHost(appID, host string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.domains[normHost(host)] = appID
	if a := f.apps[appID]; a != nil {
		a.VHosts = append(a.VHosts, host)
	}
}

// DefaultDomain is the domain Clever Cloud gives an app: app_<uuid> →
// app-<uuid>.cleverapps.io.
func DefaultDomain(appID string) string {
	return strings.ToLower(strings.Replace(appID, "_", "-", 1)) + ".cleverapps.io"
}

// normHost lower-cases a host and drops its port and a trailing dot or slash.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(h, "/")
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(h, ".")
}

// organisations lists the organisations owning apps, sorted.
func (f *Fake) organisationsLocked() []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range f.order {
		if o := f.apps[id].Owner; strings.HasPrefix(o, "orga_") && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	sort.Strings(out)
	return out
}

// sleepCtx waits d or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

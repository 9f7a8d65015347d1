package trigger

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/ratelimit"
)

// WakePathPrefix starts the producer endpoint's path on the gateway listener:
// POST /.well-known/reaper/wake/<trigger id>, Authorization: Bearer <token>.
const WakePathPrefix = "/.well-known/reaper/wake/"

// Rate limits of the producer endpoint, per client address (ratelimit.Key).
// Calls: any call, right token or wrong; a producer that enqueues a burst of
// jobs and calls for each is answered 429 past them, which loses nothing (its
// app was asked already). Failures: wrong tokens and unknown ids, as the admin
// doors count theirs, so that guessing costs what it does there.
const (
	DefaultCallsPerMinute    = 120
	DefaultFailuresBurst     = 10
	DefaultFailuresRefill    = 6 * time.Second
	endpointClients          = 4096
	endpointDoor             = "producer endpoint"
	maxEndpointAuthorization = 1024
)

// Endpoint serves the producer endpoint: a trigger {id, wake, token} woken by a
// producer that holds its token, not the admin token. An unknown id and a
// wrong token get the same 401, in the same time (both compare a digest), so
// the endpoint never says which ids exist. Each call has its access line, as
// the gateway's requests do (accesslog.go). Tokens are never logged.
type Endpoint struct {
	runner   *Runner
	byID     map[string]*Config
	calls    *ratelimit.Limiter
	failures *ratelimit.Failures
	clientOf func(*http.Request) string
	decoy    [sha256.Size]byte
	access   *slog.Logger
	trusted  []netip.Prefix
}

// EndpointOptions configure an Endpoint; zero values take the defaults.
type EndpointOptions struct {
	CallsPerMinute int
	FailuresBurst  int
	FailuresRefill time.Duration
	// ClientKey is the rate-limiting key of a request's client
	// (ratelimit.Key of its address behind the trusted proxies); nil: its
	// RemoteAddr.
	ClientKey func(*http.Request) string
	Logger    *slog.Logger
	// AccessLog receives a line per call, as the gateway's Logger does its
	// requests' (message "access"); nil: none.
	AccessLog *slog.Logger
	// TrustedProxies are the peers whose X-Forwarded-For and X-Request-Id the
	// access line believes, as the gateway does (node.trusted_proxies).
	TrustedProxies []netip.Prefix
}

// NewEndpoint returns the producer endpoint of r's triggers that have a token,
// or nil when none has (the gateway then serves the path as any other).
func NewEndpoint(r *Runner, opts EndpointOptions) *Endpoint {
	e := &Endpoint{runner: r, byID: map[string]*Config{}, clientOf: opts.ClientKey, access: opts.AccessLog, trusted: opts.TrustedProxies}
	for i := range r.opts.Triggers {
		if c := &r.opts.Triggers[i]; c.Kind() == KindEndpoint {
			e.byID[c.ID] = c
		}
	}
	if len(e.byID) == 0 {
		return nil
	}
	if e.clientOf == nil {
		e.clientOf = func(req *http.Request) string { return ratelimit.KeyOf(req.RemoteAddr) }
	}
	calls := cmp.Or(opts.CallsPerMinute, DefaultCallsPerMinute)
	e.calls = ratelimit.PerMinute(calls, endpointClients)
	e.failures = ratelimit.NewFailures(cmp.Or(opts.FailuresBurst, DefaultFailuresBurst),
		cmp.Or(opts.FailuresRefill, DefaultFailuresRefill), endpointClients, opts.Logger)
	e.decoy = sha256.Sum256([]byte("reaper: no such trigger"))
	return e
}

// Wrap returns next with the producer endpoint in front of it: requests under
// WakePathPrefix are the endpoint's, every other goes to next. A nil Endpoint
// returns next itself.
func (e *Endpoint) Wrap(next http.Handler) http.Handler {
	if e == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, WakePathPrefix) {
			e.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ServeHTTP answers POST WakePathPrefix<id>: 202 with whether a wake was asked
// ({"asked": false} when the app is up or waking already), 401 for a wrong
// token or an unknown id alike, 429 past the rate limits, 405 for another
// method. Each call writes its access line.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := e.begin(w, r)
	defer call.end()
	w = &call.rec
	if r.Method != http.MethodPost {
		call.outcome = "refused: use POST"
		w.Header().Set("Allow", http.MethodPost)
		httpjson.Error(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	now := time.Now()
	client := e.clientOf(r)
	if wait, limited := e.failures.Limited(client, endpointDoor, now); limited {
		call.outcome = "refused: too many failed calls from this client"
		e.refused(RefusedRateLimited)
		tooMany(w, wait)
		return
	}
	if ok, wait := e.calls.Allow(client, now); !ok {
		call.outcome = "refused: too many calls from this client"
		e.refused(RefusedRateLimited)
		tooMany(w, wait)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, WakePathPrefix)
	c := e.authorized(id, r.Header.Get("Authorization"))
	if c == nil {
		call.outcome = "refused: unauthorized (a wrong or missing token, or no such trigger)"
		if known := e.byID[id]; known != nil {
			call.app = known.Wake // the operator may know whose producer gets it wrong
		}
		e.failures.Failed(client, endpointDoor, now)
		e.refused(RefusedUnauthorized)
		w.Header().Set("WWW-Authenticate", `Bearer realm="reaper"`)
		httpjson.Error(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	call.app = c.Wake
	st := e.runner.states[c.ID]
	e.runner.looked(c, st, now, true, nil)
	asked, outcome := e.runner.fire(r.Context(), c, st)
	call.outcome = outcome
	httpjson.Write(w, http.StatusAccepted, map[string]any{"trigger": c.ID, "asked": asked})
}

// authorized returns the trigger of id whose token authorization bears, or
// nil. The digests of the token sent and of the trigger's token (a decoy's for
// an unknown id) are compared in constant time, so the answer's time says
// nothing of either.
func (e *Endpoint) authorized(id, authorization string) *Config {
	sent, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok || len(authorization) > maxEndpointAuthorization {
		sent = ""
	}
	got := sha256.Sum256([]byte(sent))
	want := e.decoy
	c := e.byID[id]
	if c != nil {
		want = sha256.Sum256([]byte(c.Token.Reveal()))
	}
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || c == nil || sent == "" {
		return nil
	}
	return c
}

func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(wait.Round(time.Second)/time.Second))))
	httpjson.Error(w, http.StatusTooManyRequests, "too many calls: try again later")
}

func (e *Endpoint) refused(reason string) {
	if o := e.runner.opts.Observer; o != nil {
		o.TriggerRefused(reason)
	}
}

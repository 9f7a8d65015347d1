// Package dashboard serves the operator's dashboard on the admin listener: the
// apps and their state, one app's history, wakes and savings, the actions
// (wake, sleep now, hold, release, reset), the cluster and the settings. Pages
// are templ components rendered on the server and work without JavaScript; a
// small script of its own (dashboard.js, served by the dashboard, no external
// asset) keeps them current from the admin API's event stream and confirms
// actions in a dialog.
//
// Browsers sign in with the admin token once and get a signed session cookie
// (see session.go); every form carries a CSRF token. The dashboard reads and
// acts through the admin API's own handler, in the process, so the API's rules
// and the forwarding of writes to the leader apply to it unchanged. Guard puts
// the admin API behind the Bearer token or a session.
package dashboard

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/ratelimit"

	"github.com/a-h/templ"
)

// NodeHeld is one node's count of requests waiting for each app.
type NodeHeld struct {
	Node string         `json:"node"`
	Held map[string]int `json:"held"`
}

// Options configure a Dashboard.
type Options struct {
	// Token is the admin token: it is what a browser signs in with, and the key
	// of the session cookies derives from it. Required.
	Token string
	// API is the admin API's handler (the part behind the token), called in the
	// process.
	API http.Handler
	// Node is this node's id.
	Node string
	// Store says which store the node uses ("memory", "valkey at …"), for the
	// cluster panel.
	Store string
	// StaleAfter is how old the last platform check of every app may be before
	// the dashboard warns that the platform may be unreachable (0: 3 minutes).
	StaleAfter time.Duration
	// HeldElsewhere returns the other nodes' held requests per app (in a
	// cluster; nil on a single node). Nodes that cannot be reached are left out.
	HeldElsewhere func(ctx context.Context) []NodeHeld
	// Logger receives sign-ins, sign-outs and refused attempts (never a token).
	Logger *slog.Logger
	// Failures is the budget of failed attempts per client that the sign-in
	// form and the admin API's Bearer token (Guard) take from, shared with
	// the node's other doors to the token (the waiting page preview); nil:
	// the dashboard's own (ratelimit.NewDoors).
	Failures *ratelimit.Failures
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (node.trusted_proxies): failures are counted per client, so that one
	// bad client behind a proxy does not lock every admin out.
	TrustedProxies []netip.Prefix
}

// Dashboard serves the pages. Create it with New.
type Dashboard struct {
	opts     Options
	keys     keyring
	api      *adminapi.Client // the admin API's handler, in the process
	failures *ratelimit.Failures
	log      *slog.Logger
	mux      *http.ServeMux
}

// New returns the dashboard of a node. It starts nothing.
func New(opts Options) *Dashboard {
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 3 * time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	failures := opts.Failures
	if failures == nil {
		failures = ratelimit.NewDoors(log)
	}
	d := &Dashboard{
		opts: opts, keys: newKeyring(opts.Token), api: adminapi.InProcess(opts.API, "dashboard"),
		failures: failures, log: log, mux: http.NewServeMux(),
	}
	d.routes()
	return d
}

// Paths are the patterns of the dashboard's pages on the admin listener (for
// an http.ServeMux); every other path is the admin API's.
var Paths = []string{"/{$}", "/login", "/logout", "/apps/", "/settings", "/dashboard.css", "/dashboard.js"}

func (d *Dashboard) routes() {
	m := d.mux
	m.HandleFunc("GET /dashboard.css", serveAsset(cssAsset))
	m.HandleFunc("GET /dashboard.js", serveAsset(jsAsset))
	m.HandleFunc("GET /login", d.loginForm)
	m.HandleFunc("POST /login", d.login)
	m.HandleFunc("POST /logout", d.logout)
	m.HandleFunc("GET /{$}", d.signedIn(d.index))
	m.HandleFunc("GET /apps/{id}", d.signedIn(d.appPage))
	m.HandleFunc("POST /apps/{id}/{action}", d.signedIn(d.appAction))
	m.HandleFunc("POST /settings", d.signedIn(d.settingsAction))
	m.HandleFunc("/", d.signedIn(func(w http.ResponseWriter, r *http.Request, s session) {
		d.render(w, r, http.StatusNotFound, messagePage(d.frame(s, "Not found"), "There is no such page here.", "/", "Back to the apps"))
	}))
}

// Handler serves the dashboard's pages, sign-in and assets: mount it on Paths
// of the admin listener, and the guarded admin API on the rest.
func (d *Dashboard) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Everything the pages use comes from this listener; no page may be framed.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		d.mux.ServeHTTP(w, r)
	})
}

// signedIn serves h to a signed-in browser. Others are sent to the sign-in
// form when they navigate (GET), and refused otherwise: 401 JSON for the
// script, a redirect to the form for a form posted after the session ended.
func (d *Dashboard) signedIn(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := d.keys.session(r, time.Now())
		if ok {
			h(w, r, s)
			return
		}
		if wantsJSON(r) {
			httpjson.Write(w, http.StatusUnauthorized, actionResult{Error: "you are signed out: sign in again"})
			return
		}
		next := "/"
		if r.Method == http.MethodGet {
			next = r.URL.RequestURI()
		}
		http.Redirect(w, r, "/login?next="+url.QueryEscape(next), http.StatusSeeOther)
	}
}

// frame is what every page of a signed-in browser shows around its content.
type frame struct {
	Title string
	Node  string
	CSRF  string // the session's CSRF token; empty on the sign-in page
	Who   string
	Flash *flash
	App   string    // the app of an app's page: the script follows only its events
	Now   time.Time // when the page was made: the script skips older events
}

func (d *Dashboard) frame(s session, title string) frame {
	return frame{Title: title, Node: d.opts.Node, CSRF: d.keys.csrf(s), Who: s.Name, Now: time.Now()}
}

// render renders c into a buffer first, so that a failed render never leaves
// half a page behind a 200.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, code int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		d.log.Error("rendering a dashboard page failed", "path", r.URL.Path, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// client is the rate-limiting key of the client of r: its address (from
// X-Forwarded-For when the peer is a trusted proxy), or its /64.
func (d *Dashboard) client(r *http.Request) string {
	return ratelimit.Key(plugin.ClientIP(r, d.opts.TrustedProxies))
}

// wantsJSON reports whether the request comes from the dashboard's script,
// which asks for JSON answers.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// localPath returns p when it is a path on this listener, "/" otherwise, so
// that ?next= cannot send a browser to another site after signing in.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") ||
		strings.ContainsAny(p, "\r\n\\") {
		return "/"
	}
	return p
}

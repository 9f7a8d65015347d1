// Package clevercloud drives apps on Clever Cloud through its HTTP API (with
// github.com/go-resty/resty/v2): it observes them, reads their last deployment,
// starts and stops them.
//
// It authenticates with an API token (Bearer, on the bridge host
// api-bridge.clever-cloud.com) or with OAuth 1 credentials (PLAINTEXT signature, on
// the API host api.clever-cloud.com). Owners (orga_… or user_…) come from the app,
// from a cache filled by /v2/summary, from Config.OwnerID, or are looked up in
// /v2/summary. A user_ owner's routes are under /v2/self, an organisation's under
// /v2/organisations/{id}.
//
// ObserveAll reads every app's state in one GET /v2/summary, however many apps;
// deployments are read one app at a time, only when a caller asks (LastDeployment).
// Platform failures (5xx, timeouts, connection errors) are retried a few times
// within each call; rate limits (403 with body id 403, 429) close a gate shared by
// every call of the driver (see gate.go) and are returned as *paas.RateLimitError:
// the caller keeps what it wanted to do and asks again later. No credential value
// ever appears in a log line or an error.
package clevercloud

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/reapergw/reaper/paas"
)

var (
	_ paas.Client           = (*Client)(nil)
	_ paas.BatchObserver    = (*Client)(nil)
	_ paas.DeploymentReader = (*Client)(nil)
	_ paas.Owner            = (*Client)(nil)
)

// ErrNotShutdownable: Stop refused to stop an app whose deployment.shutdownable is
// false. Not retryable: the app must stay up.
// It is paas.ErrNotShutdownable, so that callers need not know this driver.
var ErrNotShutdownable = paas.ErrNotShutdownable

// maxBody bounds an answer read into memory (a summary of thousands of apps is a
// few hundred kB).
const maxBody = 16 << 20

// Options tune a Client; the zero value is right for production.
type Options struct {
	// Logger receives the driver's log lines; nil discards them.
	Logger *slog.Logger
	// Version goes in the User-Agent, reaper/<version> ("dev" when empty).
	Version string
	// Transport carries the requests; nil means a pooled transport of our own.
	Transport http.RoundTripper
	// Attempts is the most attempts per call for platform failures (default 3).
	Attempts int
	// RetryBase and RetryMax bound the back-off between attempts (250 ms, 2 s).
	RetryBase, RetryMax time.Duration
	// RateLimitBase and RateLimitMax bound the shared back-off after a rate limit
	// without Retry-After (1 s; Config.RateLimitMaxBackoff, else
	// DefaultRateLimitMax).
	RateLimitBase, RateLimitMax time.Duration
	// GateWait is the longest a call waits for the rate-limit gate before it
	// returns a *paas.RateLimitError without calling the API (default 10 s).
	GateWait time.Duration
	// OwnerRefresh is the least time between two /v2/summary reads made to find
	// the owner of an app that is not in the cache (default 30 s).
	OwnerRefresh time.Duration
	// VHostMaxAge is how long the apps' vhosts, once listed, answer FindApp
	// (default DefaultVHostMaxAge); VHostRefresh the least time between two
	// listings made because a host is missing (default DefaultVHostRefresh).
	VHostMaxAge, VHostRefresh time.Duration
}

// Client is the Clever Cloud driver. It is safe for concurrent use; its HTTP
// connections are pooled.
type Client struct {
	cfg       Config
	base      string
	rc        *resty.Client
	log       *slog.Logger
	redact    redactor
	gate      *gate
	userAgent string

	attempts            int
	retryBase, retryMax time.Duration
	gateWait            time.Duration

	owners ownerCache
	costs  costCache
	vhosts vhostIndex

	mu           sync.Mutex
	shutdownable map[string]bool // app id → deployment.shutdownable, as last read
}

// New returns a driver for cfg. It fails, with the messages the configuration
// decoder would give, when cfg is not valid. It makes no call.
func New(cfg Config, opts Options) (*Client, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	def := func(v, d time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return d
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	transport := opts.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 32, 16
		transport = t
	}
	hc := &http.Client{
		Transport: transport,
		// An API call has no reason to redirect; following one could carry the
		// credential elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c := &Client{
		cfg:          cfg,
		base:         cfg.baseURL(),
		log:          log,
		redact:       newRedactor(cfg),
		userAgent:    "reaper/" + version,
		attempts:     opts.Attempts,
		retryBase:    def(opts.RetryBase, 250*time.Millisecond),
		retryMax:     def(opts.RetryMax, 2*time.Second),
		gateWait:     def(opts.GateWait, 10*time.Second),
		shutdownable: map[string]bool{},
	}
	if c.attempts <= 0 {
		c.attempts = 3
	}
	c.gate = &gate{base: def(opts.RateLimitBase, time.Second), max: def(opts.RateLimitMax, cfg.rateLimitMax())}
	c.owners.refresh = def(opts.OwnerRefresh, 30*time.Second)
	c.vhosts.maxAge = def(opts.VHostMaxAge, DefaultVHostMaxAge)
	c.vhosts.refresh = min(def(opts.VHostRefresh, DefaultVHostRefresh), c.vhosts.maxAge)
	c.rc = resty.NewWithClient(hc).
		SetLogger(restyLogger{log: log, redact: c.redact}).
		SetDisableWarn(true).
		SetResponseBodyLimit(maxBody).
		// No call has a body. Without this, resty hands net/http an empty body
		// of unknown length, and a POST goes out chunked: with it, the body is
		// http.NoBody, so a POST says Content-Length: 0 and a GET or a DELETE
		// carries no framing header (as RFC 9110 §8.6 asks).
		SetContentLength(true)
	return c, nil
}

// ownerPath is the route prefix of an owner: /v2/self for a user, else
// /v2/organisations/{id}.
func ownerPath(owner string) string {
	if strings.HasPrefix(owner, "user_") {
		return "/v2/self"
	}
	return "/v2/organisations/" + url.PathEscape(owner)
}

// appPath is the route of an app, its owner resolved (see resolve).
func (c *Client) appPath(ctx context.Context, app paas.App) (paas.App, string, error) {
	owner, err := c.resolve(ctx, app)
	if err != nil {
		return app, "", err
	}
	app.Owner = owner
	return app, ownerPath(owner) + "/applications/" + url.PathEscape(app.ID), nil
}

type jsonApp struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	State      string `json:"state"`
	OwnerID    string `json:"ownerId"`
	Zone       string `json:"zone"`
	Deployment struct {
		Shutdownable *bool `json:"shutdownable"`
	} `json:"deployment"`
	Instance struct {
		MinInstances int `json:"minInstances"`
		MaxInstances int `json:"maxInstances"`
		MinFlavor    struct {
			Name    string `json:"name"`
			PriceID string `json:"price_id"`
			Mem     int    `json:"mem"` // MiB
		} `json:"minFlavor"`
		MaxFlavor struct {
			Name    string `json:"name"`
			PriceID string `json:"price_id"`
		} `json:"maxFlavor"`
	} `json:"instance"`
	VHosts []struct {
		FQDN string `json:"fqdn"`
	} `json:"vhosts"`
	Homogeneous bool `json:"homogeneous"`
}

func (c *Client) getApp(ctx context.Context, app paas.App, op string) (jsonApp, error) {
	app, path, err := c.appPath(ctx, app)
	if err != nil {
		return jsonApp{}, err
	}
	req := request{op: op, app: app, method: http.MethodGet, path: path, safe: true}
	body, err := c.do(ctx, req)
	if err != nil {
		return jsonApp{}, err
	}
	var j jsonApp
	if err := json.Unmarshal(body, &j); err != nil || j.ID == "" {
		return jsonApp{}, c.fail(req, "the answer is not an application", paas.ErrUnavailable)
	}
	shut := j.Deployment.Shutdownable == nil || *j.Deployment.Shutdownable
	c.mu.Lock()
	c.shutdownable[app.ID] = shut
	c.mu.Unlock()
	c.owners.learn(app.ID, app.Owner)
	return j, nil
}

// Observe reads the app (GET {owner}/applications/{id}): its state, its name, and
// whether it may be stopped. It leaves Observation.Deployment nil (see
// LastDeployment). It blocks for at most one call with its retries, bounded by
// ctx; errors wrap paas.ErrNotFound, ErrAuth, ErrRateLimited or ErrUnavailable.
func (c *Client) Observe(ctx context.Context, app paas.App) (paas.Observation, error) {
	j, err := c.getApp(ctx, app, "observe")
	if err != nil {
		return paas.Observation{}, err
	}
	return paas.Observation{State: paas.State(j.State), Name: j.Name,
		NotShutdownable: j.Deployment.Shutdownable != nil && !*j.Deployment.Shutdownable}, nil
}

// ObserveAll reads the state of every app the credential sees in one GET
// /v2/summary, however many apps are asked. Apps absent from the summary are absent
// from the map. The summary does not say whether an app may be stopped:
// NotShutdownable is what the last Observe or Stop of the app read (false when
// never read). It also fills the owner cache. Errors are those of Observe, for the
// whole batch.
func (c *Client) ObserveAll(ctx context.Context, apps []paas.App) (map[paas.App]paas.Observation, error) {
	if len(apps) == 0 {
		return map[paas.App]paas.Observation{}, nil
	}
	seen, err := c.summary(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[paas.App]paas.Observation, len(apps))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range apps {
		s, ok := seen[a.ID]
		if !ok {
			continue
		}
		shut, known := c.shutdownable[a.ID]
		out[a] = paas.Observation{State: paas.State(s.state), Name: s.name, NotShutdownable: known && !shut}
	}
	return out, nil
}

type jsonDeployment struct {
	ID     int64   `json:"id"`
	UUID   string  `json:"uuid"`
	Date   int64   `json:"date"`
	State  string  `json:"state"`
	Action string  `json:"action"`
	Commit string  `json:"commit"`
	Cause  *string `json:"cause"`
}

// LastDeployment reads the app's newest deployment (GET
// {owner}/applications/{id}/deployments?limit=2), with the one before it in Before;
// nil, nil when it has none. Errors
// are those of Observe.
func (c *Client) LastDeployment(ctx context.Context, app paas.App) (*paas.Deployment, error) {
	app, path, err := c.appPath(ctx, app)
	if err != nil {
		return nil, err
	}
	// Two: the one before the last tells a stop after a start from the stop
	// before it (paas.Deployment.Before).
	req := request{op: "read the last deployment of", app: app, method: http.MethodGet, path: path + "/deployments",
		query: map[string]string{"limit": "2"}, safe: true}
	body, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	var list []jsonDeployment
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, c.fail(req, "the answer is not a list of deployments", paas.ErrUnavailable)
	}
	if len(list) == 0 {
		return nil, nil
	}
	dep := c.deployment(list[0])
	if len(list) > 1 {
		dep.Before = c.deployment(list[1])
	}
	return dep, nil
}

func (c *Client) deployment(d jsonDeployment) *paas.Deployment {
	dep := &paas.Deployment{State: paas.DeploymentState(d.State), Action: d.Action, At: time.UnixMilli(d.Date)}
	if d.Cause != nil {
		dep.Cause = c.clean(*d.Cause)
	}
	return dep
}

// Start asks Clever Cloud to start the app (POST {owner}/applications/{id}/instances)
// and returns once the API accepted it. On an app that is up this RESTARTS it:
// callers must not send it then. It is retried only when the request surely had no
// effect. Errors wrap paas.ErrNeverDeployed (4014: the app cannot be started),
// ErrBusy (locked by another operation: ask again later), ErrRateLimited,
// ErrUnavailable, ErrNotFound, ErrAuth.
func (c *Client) Start(ctx context.Context, app paas.App) error {
	app, path, err := c.appPath(ctx, app)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{op: "start", app: app, method: http.MethodPost, path: path + "/instances"})
	if err == nil {
		c.log.Info("clevercloud: start accepted", "app", app.ID, "owner", app.Owner)
	}
	return err
}

// Stop asks Clever Cloud to stop the app (DELETE {owner}/applications/{id}/instances).
// It reads the app first and refuses with ErrNotShutdownable when its
// deployment.shutdownable is false. Stopping an app that is down does no harm.
// Errors are those of Start (but ErrNeverDeployed).
func (c *Client) Stop(ctx context.Context, app paas.App) error {
	j, err := c.getApp(ctx, app, "stop")
	if err != nil {
		return err
	}
	if j.Deployment.Shutdownable != nil && !*j.Deployment.Shutdownable {
		return fmt.Errorf("clevercloud: stop %s: %w", app.ID, ErrNotShutdownable)
	}
	app, path, err := c.appPath(ctx, app)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{op: "stop", app: app, method: http.MethodDelete, path: path + "/instances"})
	if err == nil {
		c.log.Info("clevercloud: stop accepted", "app", app.ID, "owner", app.Owner)
	}
	return err
}

// restyLogger sends resty's own messages to slog at debug level, cleaned of any
// credential.
type restyLogger struct {
	log    *slog.Logger
	redact redactor
}

func (l restyLogger) Errorf(format string, v ...any) { l.out(format, v...) }
func (l restyLogger) Warnf(format string, v ...any)  { l.out(format, v...) }
func (l restyLogger) Debugf(format string, v ...any) { l.out(format, v...) }

func (l restyLogger) out(format string, v ...any) {
	l.log.Debug("clevercloud: http client", "message", l.redact.clean(fmt.Sprintf(format, v...)))
}

// Owns reports whether the id has the form of a Clever Cloud app id, app_…
// (paas.Owner): any such app may be the credential's.
func (c *Client) Owns(appID string) bool { return strings.HasPrefix(appID, "app_") }

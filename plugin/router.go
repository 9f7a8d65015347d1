package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httputil"
	"net/url"
	"regexp"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/reapergw/reaper/internal/conf"
)

// BuildOptions are what BuildRouter needs besides the routes.
type BuildOptions struct {
	// Logger receives plugin and proxy logs; each plugin's logger carries the route
	// and plugin ids. Nil discards.
	Logger *slog.Logger
	// Services are shared services wired by the binary, handed to plugins through
	// ProvisionContext.Services.
	Services map[string]any
	// Transports holds the upstream connection pools. The binary creates one and
	// passes it to every build, so that a reload keeps the open keep-alive
	// connections. Nil gives the router pools of its own, closed with it.
	Transports *Transports
}

// Router is an immutable set of built routes: matchers compiled, plugin instances
// provisioned, one reverse proxy per route. Its methods are safe for concurrent
// use.
type Router struct {
	routes  []*Route
	table   *table
	logger  *slog.Logger
	private *Transports // pools owned by this router (BuildOptions.Transports nil)
	closed  sync.Once
}

// Route is one built route. Its exported fields are read-only.
type Route struct {
	ID      string
	Name    string
	Enabled bool
	// Config is the route's configuration as it was built (a copy).
	Config *RouteConfig

	domains  []domain
	methods  []string
	headers  []headerMatcher
	strip    bool
	targets  []*upstream
	wrr      *schedule
	timeouts Timeouts
	maxConns int

	plugins []*instance // enabled plugins, in declared order
	// Plugins per step, in declared order: computed once so that a request only
	// walks the plugins of each step.
	pre    []*instance
	access []*instance
	reqT   []*instance
	respT  []*instance
	dial   []*instance
	// filtered is the bit set of plugins with include/exclude patterns.
	filtered uint64

	proxy      *httputil.ReverseProxy
	freshProxy *httputil.ReverseProxy // the same, over connections opened per request
	transport  *routeTransport
	logger     *slog.Logger
}

// DropIdleConnections closes the idle keep-alive connections to the route's
// targets (of every route that shares them); connections in use are left alone.
// The reaper plugin drops them when an app stops or wakes: a connection kept
// idle across the app's sleep may be dead without its gateway side knowing (a
// connection the app never accepted leaves no trace on its side), and a request
// whose body cannot be sent again would fail on it. It does not block.
func (r *Route) DropIdleConnections() {
	if r.transport != nil {
		r.transport.closeIdle()
	}
}

// upstream is one target of a route, with root and path already joined.
type upstream struct {
	url      *url.URL
	basePath string // target path + root, without trailing slash
	name     string // for the access log
}

// instance is one plugin of one route.
type instance struct {
	kind    string // plugin id
	path    string // routes[i].plugins[j]
	p       Plugin
	include []*regexp.Regexp
	exclude []*regexp.Regexp
	bit     uint64
	logger  *slog.Logger

	provisioned bool // Provision succeeded (or was not needed): Cleanup is due

	pre    PreRouter
	access AccessValidator
	reqT   RequestTransformer
	respT  ResponseTransformer
	dial   DialFailureHandler
}

// appliesTo reports whether the plugin runs for a request with this path: never
// when an exclude pattern matches, and, when there are include patterns, only if
// one matches.
func (i *instance) appliesTo(path string) bool {
	for _, re := range i.exclude {
		if re.MatchString(path) {
			return false
		}
	}
	if len(i.include) == 0 {
		return true
	}
	for _, re := range i.include {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

// BuildRouter validates routes (as ValidateRoutes), then creates and provisions
// one instance per enabled plugin of each enabled route, in order, and builds the
// matchers and proxies. Provisioning may block as long as the plugins' Provision
// do. On any error it cleans up the instances already provisioned and returns a
// conf.List whose entries carry field paths under "routes". It never closes
// opts.Transports.
func BuildRouter(ctx context.Context, routes []RouteConfig, opts BuildOptions) (*Router, error) {
	var errs conf.Errors
	compiled := compileRoutes(routes, "routes", &errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rt := &Router{routes: compiled, logger: logger}
	transports := opts.Transports
	if transports == nil {
		rt.private = NewTransports()
		transports = rt.private
	}
	for _, r := range compiled {
		r.logger = logger.With("route", r.ID)
		if !r.Enabled {
			r.plugins = nil // never run: not provisioned either
			continue
		}
		for _, inst := range r.plugins {
			inst.logger = r.logger.With("plugin", inst.kind)
			pc := ProvisionContext{
				Context:             ctx,
				Logger:              inst.logger,
				Route:               r.Config,
				Path:                conf.Key(inst.path, "config"),
				Services:            opts.Services,
				DropIdleConnections: r.DropIdleConnections, // r's pools are set below
			}
			if err := provision(inst, pc); err != nil {
				addProvisionError(&errs, pc.Path, err)
				continue
			}
			inst.provisioned = true
		}
		r.classify()
		r.transport = transports.newRouteTransport(r, false)
		r.proxy = r.newProxy(r.transport, r.logger)
		r.freshProxy = r.newProxy(transports.newRouteTransport(r, true), r.logger)
	}
	if err := errs.Err(); err != nil {
		rt.Close()
		return nil, err
	}
	rt.table = newTable(compiled)
	return rt, nil
}

// provision runs the instance's Provision, turning a panic into an error.
func provision(inst *instance, pc ProvisionContext) (err error) {
	pv, ok := inst.p.(Provisioner)
	if !ok {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			inst.logger.Error("plugin panicked in Provision", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("the plugin failed while it was set up (panic: %v)", v)
		}
	}()
	return pv.Provision(pc)
}

// addProvisionError records a Provision error: configuration errors the plugin
// built with full paths (conf.List, *conf.Errors, conf.Error) are kept as they are,
// anything else is reported at the plugin's config path.
func addProvisionError(errs *conf.Errors, path string, err error) {
	var list conf.List
	var ce *conf.Errors
	var one conf.Error
	switch {
	case errors.As(err, &list), errors.As(err, &ce), errors.As(err, &one):
		switch {
		case list != nil:
			errs.AddError("", list)
		case ce != nil:
			errs.AddError("", ce)
		default:
			errs.AddError("", one)
		}
	default:
		errs.Add(path, "%s", err.Error())
	}
}

// classify sorts the route's plugins into the steps they implement.
func (r *Route) classify() {
	for _, inst := range r.plugins {
		if len(inst.include) > 0 || len(inst.exclude) > 0 {
			r.filtered |= inst.bit
		}
		if s, ok := inst.p.(PreRouter); ok {
			inst.pre, r.pre = s, append(r.pre, inst)
		}
		if s, ok := inst.p.(AccessValidator); ok {
			inst.access, r.access = s, append(r.access, inst)
		}
		if s, ok := inst.p.(RequestTransformer); ok {
			inst.reqT, r.reqT = s, append(r.reqT, inst)
		}
		if s, ok := inst.p.(ResponseTransformer); ok {
			inst.respT, r.respT = s, append(r.respT, inst)
		}
		if s, ok := inst.p.(DialFailureHandler); ok {
			inst.dial, r.dial = s, append(r.dial, inst)
		}
	}
}

// Routes returns every route in configuration order, disabled ones included.
func (rt *Router) Routes() []*Route {
	return append([]*Route(nil), rt.routes...)
}

// Close runs Cleanup on every provisioned plugin instance (errors and panics are
// logged) and closes the router's own idle upstream connections. It is
// idempotent. Requests still using the router keep running; call Close after the
// router was swapped out.
func (rt *Router) Close() {
	rt.closed.Do(func() {
		for _, r := range rt.routes {
			for _, inst := range r.plugins {
				if inst.provisioned {
					cleanup(inst)
				}
			}
		}
		if rt.private != nil {
			rt.private.CloseIdleConnections()
		}
	})
}

func cleanup(inst *instance) {
	c, ok := inst.p.(CleanerUpper)
	if !ok {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			inst.logger.Error("plugin panicked during cleanup", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	if err := c.Cleanup(); err != nil {
		inst.logger.Error("plugin cleanup failed", "error", err)
	}
}

// schedule is a precomputed smooth weighted round robin over a route's targets:
// the sequence is built once, and picking is one atomic increment, without lock.
type schedule struct {
	seq  []int
	next atomic.Uint64
}

// newSchedule returns nil for zero or one target (always the first).
func newSchedule(weights []int) *schedule {
	if len(weights) < 2 {
		return nil
	}
	g := weights[0]
	for _, w := range weights[1:] {
		g = gcd(g, w)
	}
	total := 0
	for _, w := range weights {
		total += w / g
	}
	// Smooth weighted round robin: each turn every target gains its weight, the
	// richest is picked and pays the total. It spreads a heavy target's turns
	// instead of bunching them.
	current := make([]int, len(weights))
	seq := make([]int, total)
	for k := range seq {
		best := 0
		for i, w := range weights {
			current[i] += w / g
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		seq[k] = best
	}
	return &schedule{seq: seq}
}

func (s *schedule) pick() int {
	if s == nil {
		return 0
	}
	n := s.next.Add(1) - 1
	return s.seq[n%uint64(len(s.seq))]
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

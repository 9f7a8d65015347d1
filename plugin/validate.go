package plugin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"

	"github.com/reapergw/reaper/internal/conf"
)

// Limits on one route, so that a configuration cannot make matching or the chain
// unbounded.
const (
	maxPluginsPerRoute = 64 // the chain keeps one bit per plugin
	maxWeight          = 100
	maxIDLength        = 128
)

// ValidateRoutes checks routes statically: ids, domains, methods, headers,
// targets, paths, include/exclude patterns, plugin ids, and every plugin config
// (decoded strictly into a new instance of its plugin, then validated). It
// provisions nothing and has no side effect, so `reaper check` can run it. Every
// problem is added to errs with its field path under path (e.g. "routes").
func ValidateRoutes(routes []RouteConfig, path string, errs *conf.Errors) {
	compileRoutes(routes, path, errs)
}

// compileRoutes validates routes and returns them compiled (matchers, targets, and
// unprovisioned plugin instances). The result is meaningful only when no error was
// added.
func compileRoutes(routes []RouteConfig, path string, errs *conf.Errors) []*Route {
	out := make([]*Route, len(routes))
	seen := map[string]int{}
	for i := range routes {
		rc := routes[i] // a copy the route keeps: the caller's slice may change
		p := conf.Index(path, i)
		if rc.ID != "" {
			if j, dup := seen[rc.ID]; dup {
				errs.Add(conf.Key(p, "id"), "%s is already the id of %s", strconv.Quote(rc.ID), conf.Index(path, j))
			} else {
				seen[rc.ID] = i
			}
		}
		out[i] = compileRoute(&rc, p, errs)
	}
	shadowedDomains(routes, out, path, errs)
	return out
}

// shadowedDomains refuses a domain that an earlier route has too when neither
// route narrows it by method or header: the later could never be matched (hosts
// compare in lower case, "A.test" is "a.test").
func shadowedDomains(routes []RouteConfig, out []*Route, path string, errs *conf.Errors) {
	type at struct{ route, domain int }
	first := map[domain]at{}
	for i, r := range out {
		if r == nil || len(routes[i].Frontend.Methods) > 0 || len(routes[i].Frontend.Headers) > 0 || !routes[i].Enabled {
			continue
		}
		for j, d := range r.domains {
			if prev, dup := first[d]; dup {
				errs.Add(conf.Index(conf.Key(conf.Key(conf.Index(path, i), "frontend"), "domains"), j),
					"%s is already a domain of %s (%s), which always matches first: this route would never be reached",
					strconv.Quote(routes[i].Frontend.Domains[j]), conf.Index(path, prev.route), strconv.Quote(routes[prev.route].Frontend.Domains[prev.domain]))
				continue
			}
			first[d] = at{i, j}
		}
	}
}

func compileRoute(rc *RouteConfig, path string, errs *conf.Errors) *Route {
	if rc.Name == "" {
		rc.Name = rc.ID
	}
	r := &Route{ID: rc.ID, Name: rc.Name, Enabled: rc.Enabled, Config: rc, strip: rc.Frontend.StripPath}
	switch {
	case rc.ID == "":
		errs.Add(conf.Key(path, "id"), "is required")
	case !validID(rc.ID):
		errs.Add(conf.Key(path, "id"), "%s is not a valid id (up to %d letters, digits, '-', '_' or '.')", strconv.Quote(rc.ID), maxIDLength)
	}
	compileFrontend(r, &rc.Frontend, conf.Key(path, "frontend"), errs)
	compileBackend(r, &rc.Backend, conf.Key(path, "backend"), errs)

	pp := conf.Key(path, "plugins")
	if len(rc.Plugins) > maxPluginsPerRoute {
		errs.Add(pp, "has %d plugins; a route may have at most %d", len(rc.Plugins), maxPluginsPerRoute)
	}
	for j := range rc.Plugins {
		if inst := compilePlugin(&rc.Plugins[j], conf.Index(pp, j), errs); inst != nil && rc.Plugins[j].Enabled {
			inst.bit = uint64(1) << (len(r.plugins) % 64)
			r.plugins = append(r.plugins, inst)
		}
	}
	return r
}

func validID(s string) bool {
	if len(s) > maxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func compileFrontend(r *Route, f *FrontendConfig, path string, errs *conf.Errors) {
	dp := conf.Key(path, "domains")
	if len(f.Domains) == 0 {
		errs.Add(dp, "at least one domain is required")
	}
	for i, s := range f.Domains {
		d, ok := parseDomain(s)
		if !ok {
			errs.Add(conf.Index(dp, i), "%s is not a valid domain (host or host/path)", strconv.Quote(s))
			continue
		}
		r.domains = append(r.domains, d)
	}
	mp := conf.Key(path, "methods")
	for i, m := range f.Methods {
		if !httpguts.ValidHeaderFieldName(m) { // a method is a token too
			errs.Add(conf.Index(mp, i), "%s is not an HTTP method", strconv.Quote(m))
			continue
		}
		r.methods = append(r.methods, strings.ToUpper(m))
	}
	hp := conf.Key(path, "headers")
	names := make([]string, 0, len(f.Headers))
	for name := range f.Headers {
		names = append(names, name)
	}
	sort.Strings(names) // map order is random; errors and matching order are not
	canon := map[string]string{}
	for _, name := range names {
		p := conf.Key(hp, name)
		if !httpguts.ValidHeaderFieldName(name) {
			errs.Add(p, "%s is not a valid header name", strconv.Quote(name))
			continue
		}
		c := http.CanonicalHeaderKey(name)
		if other, dup := canon[c]; dup {
			errs.Add(p, "is the same header as %s (header names ignore case)", strconv.Quote(other))
			continue
		}
		canon[c] = name
		m, err := compileHeaderMatcher(name, f.Headers[name])
		if err != nil {
			errs.Add(p, "%s", regexpError(f.Headers[name], err))
			continue
		}
		r.headers = append(r.headers, m)
	}
}

func compileBackend(r *Route, b *BackendConfig, path string, errs *conf.Errors) {
	root, ok := cleanPrefix(b.Root)
	switch {
	case b.Root == "":
	case !ok:
		errs.Add(conf.Key(path, "root"), "%s is not a valid path prefix (it must start with / and hold no empty, . or .. segment nor characters that need escaping)", strconv.Quote(b.Root))
	}
	tp := conf.Key(path, "targets")
	if len(b.Targets) == 0 {
		errs.Add(tp, "at least one target is required")
	}
	var weights []int
	for i, t := range b.Targets {
		p := conf.Index(tp, i)
		if t.malformed {
			continue
		}
		u, msg := parseTarget(t.URL)
		if msg != "" {
			errs.Add(p, "%s", msg)
			continue
		}
		if t.Weight < 1 || t.Weight > maxWeight {
			errs.Add(conf.Key(p, "weight"), "must be between 1 and %d, got %d", maxWeight, t.Weight)
			continue
		}
		base := strings.TrimRight(u.Path, "/") + root
		r.targets = append(r.targets, &upstream{
			url:      &url.URL{Scheme: u.Scheme, Host: u.Host, Path: base},
			basePath: base,
			name:     u.Scheme + "://" + u.Host + base,
		})
		weights = append(weights, t.Weight)
	}
	r.wrr = newSchedule(weights)
	r.timeouts = b.Timeouts
	if b.MaxConnections < 0 {
		errs.Add(conf.Key(path, "max_connections"), "must be 0 (no limit) or more, got %d", b.MaxConnections)
	}
	r.maxConns = b.MaxConnections
}

// parseTarget checks a target URL; msg is empty when it is fine. Messages never
// quote a URL that holds credentials.
func parseTarget(s string) (*url.URL, string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		if u != nil && u.User != nil {
			return nil, "is not an http(s) URL"
		}
		return nil, strconv.Quote(s) + " is not an http(s) URL"
	}
	switch {
	case u.User != nil:
		return nil, "must not hold credentials (user:password@); use the headers plugin to send an Authorization header"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, strconv.Quote(s) + " must not have a query or a fragment"
	case u.Path != "" && u.RawPath != "":
		return nil, strconv.Quote(s) + " must not have an escaped path"
	}
	if _, ok := cleanPrefix("/" + strings.TrimLeft(u.Path, "/")); !ok {
		return nil, strconv.Quote(s) + " has a path that is not a valid path prefix"
	}
	return u, ""
}

// compilePlugin checks one plugins[] entry and returns its instance with the
// config decoded, or nil when the entry has errors.
func compilePlugin(pc *PluginConfig, path string, errs *conf.Errors) *instance {
	before := errs.Len()
	inst := &instance{kind: pc.Plugin, path: path}
	for i, re := range pc.Include {
		c, err := compileFull(re)
		if err != nil {
			errs.Add(conf.Index(conf.Key(path, "include"), i), "%s", regexpError(re, err))
			continue
		}
		inst.include = append(inst.include, c)
	}
	for i, re := range pc.Exclude {
		c, err := compileFull(re)
		if err != nil {
			errs.Add(conf.Index(conf.Key(path, "exclude"), i), "%s", regexpError(re, err))
			continue
		}
		inst.exclude = append(inst.exclude, c)
	}
	if pc.Plugin == "" {
		errs.Add(conf.Key(path, "plugin"), "is required")
		return nil
	}
	info, ok := Lookup(pc.Plugin)
	if !ok {
		errs.Add(conf.Key(path, "plugin"), "unknown plugin %s (registered: %s)", strconv.Quote(pc.Plugin), strings.Join(IDs(), ", "))
		return nil
	}
	inst.p = decodePlugin(info, pc, conf.Key(path, "config"), errs)
	if errs.Len() > before {
		return nil
	}
	return inst
}

// decodePlugin returns a new instance of info with pc.Config decoded into it and
// validated.
func decodePlugin(info Info, pc *PluginConfig, path string, errs *conf.Errors) Plugin {
	p := info.New()
	d := conf.Decoder{Env: pc.env}
	n := &pc.Config
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		// No config: the decoder would not visit the struct, so validate here
		// (a plugin may require some of its keys).
		if v, ok := p.(conf.Validator); ok {
			v.Validate(path, errs)
		}
		return p
	}
	d.Decode(n, p, path, errs)
	return p
}

// regexpError says why a regular expression was refused, without Go's wording.
func regexpError(re string, err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s is not a valid regular expression: %s", strconv.Quote(re), se.Code)
	}
	return fmt.Sprintf("%s is not a valid regular expression: %v", strconv.Quote(re), err)
}

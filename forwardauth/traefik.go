package forwardauth

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/reapergw/reaper/plugin"
)

// PathTraefik is Traefik's HTTP provider endpoint: its dynamic configuration
// (the file provider's format, as JSON) for the routes marked for Traefik, each
// a router and a service behind the forwardAuth middleware that asks PathAuth.
// Traefik keeps these routes whether the app's container runs or not: no 404
// once it sleeps.
const PathTraefik = "/traefik"

// TraefikMiddleware is the name of the forwardAuth middleware in PathTraefik's
// answer.
const TraefikMiddleware = "reaper-auth"

// Traefik's dynamic configuration, the parts reaper writes.
type (
	traefikConfig struct {
		HTTP traefikHTTP `json:"http"`
	}
	traefikHTTP struct {
		Routers     map[string]traefikRouter     `json:"routers"`
		Services    map[string]traefikService    `json:"services"`
		Middlewares map[string]traefikMiddleware `json:"middlewares"`
	}
	traefikRouter struct {
		Rule        string   `json:"rule"`
		Service     string   `json:"service"`
		Middlewares []string `json:"middlewares"`
	}
	traefikService struct {
		LoadBalancer traefikLB `json:"loadBalancer"`
	}
	traefikLB struct {
		Servers []traefikServer `json:"servers"`
	}
	traefikServer struct {
		URL    string `json:"url"`
		Weight *int   `json:"weight,omitempty"`
	}
	traefikMiddleware struct {
		ForwardAuth traefikForwardAuth `json:"forwardAuth"`
	}
	traefikForwardAuth struct {
		Address string `json:"address"`
	}
)

// traefikJSON is the configuration of the routes whose ids are in marked, with
// the middleware asking authURL (the listener's URL as Traefik reaches it).
// Maps are written in key order, so the same routes give the same bytes.
func traefikJSON(routes []*plugin.Route, marked map[string]bool, authURL string) ([]byte, error) {
	c := traefikConfig{HTTP: traefikHTTP{
		Routers: map[string]traefikRouter{}, Services: map[string]traefikService{},
		Middlewares: map[string]traefikMiddleware{TraefikMiddleware: {ForwardAuth: traefikForwardAuth{Address: strings.TrimSuffix(authURL, "/") + PathAuth}}},
	}}
	for _, r := range routes {
		if !marked[r.ID] || r.Config == nil || !r.Enabled {
			continue
		}
		name := "reaper-" + r.ID
		var rules []string
		for _, d := range r.Config.Frontend.Domains {
			rules = append(rules, traefikRule(d))
		}
		c.HTTP.Routers[name] = traefikRouter{Rule: strings.Join(rules, " || "), Service: name, Middlewares: []string{TraefikMiddleware}}
		var lb traefikLB
		weighted := lbWeighted(r.Config.Backend.Targets)
		for _, t := range r.Config.Backend.Targets {
			s := traefikServer{URL: t.URL}
			if weighted {
				w := t.Weight
				s.Weight = &w
			}
			lb.Servers = append(lb.Servers, s)
		}
		c.HTTP.Services[name] = traefikService{LoadBalancer: lb}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // rules read as written: && stays &&
	err := enc.Encode(c)
	return b.Bytes(), err
}

// lbWeighted reports whether the targets' weights differ (Traefik's default
// weight is 1, as reaper's).
func lbWeighted(ts []plugin.Target) bool {
	for _, t := range ts {
		if t.Weight != ts[0].Weight {
			return true
		}
	}
	return false
}

// traefikRule is the rule of a reaper domain ("host", "*.name", "*", each with
// an optional "/path" prefix), in Traefik v3's syntax.
func traefikRule(d string) string {
	host, path, hasPath := strings.Cut(d, "/")
	var rule string
	switch {
	case host == "*":
		rule = "PathPrefix(`/`)"
	case strings.HasPrefix(host, "*."):
		rule = "HostRegexp(`^[^.]+" + regexp.QuoteMeta(host[1:]) + "$`)"
	default:
		rule = "Host(`" + host + "`)"
	}
	if hasPath && path != "" {
		p := "/" + strings.TrimSuffix(path, "/")
		rule = "(" + rule + " && (Path(`" + p + "`) || PathPrefix(`" + p + "/`)))"
	}
	return rule
}

// serveTraefik answers Traefik's HTTP provider.
func (s *Server) serveTraefik(w http.ResponseWriter) {
	var routes []*plugin.Route
	if s.routes != nil {
		routes = s.routes()
	}
	body, err := traefikJSON(routes, s.marked(), s.authURL)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body) //nolint:errcheck // Traefik gone is not our error
}

// marked is the set of route ids given to Traefik: those the configuration
// names, and those whose apps' labels ask for it now.
func (s *Server) marked() map[string]bool {
	if s.traefikLabeled == nil {
		return s.traefikRoutes
	}
	labeled := s.traefikLabeled()
	if len(labeled) == 0 {
		return s.traefikRoutes
	}
	m := make(map[string]bool, len(s.traefikRoutes)+len(labeled))
	for id := range s.traefikRoutes {
		m[id] = true
	}
	for _, id := range labeled {
		m[id] = true
	}
	return m
}

package forwardauth

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/reapergw/reaper/plugin"
)

func traefikRoutes(t *testing.T) []*plugin.Route {
	t.Helper()
	route := func(id string, domains []string, targets ...plugin.Target) plugin.RouteConfig {
		return plugin.RouteConfig{ID: id, Enabled: true, Frontend: plugin.FrontendConfig{Domains: domains},
			Backend: plugin.BackendConfig{Targets: targets}}
	}
	rt, err := plugin.BuildRouter(context.Background(), []plugin.RouteConfig{
		route("web", []string{"app.example.com", "*.apps.example.com"}, plugin.Target{URL: "http://10.0.0.5:3000", Weight: 1}),
		route("api", []string{"example.com/api"}, plugin.Target{URL: "http://10.0.0.6:80", Weight: 3}, plugin.Target{URL: "http://10.0.0.7:80", Weight: 1}),
		route("hidden", []string{"secret.example.com"}, plugin.Target{URL: "http://10.0.0.8:80", Weight: 1}),
	}, plugin.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt.Routes()
}

// The answer is Traefik's dynamic configuration in the file provider's shape
// (http.routers, http.services with loadBalancer.servers, http.middlewares
// with forwardAuth.address), for the marked routes only, every router behind
// the middleware that asks /auth.
func TestTraefikJSON_TheMarkedRoutesInTraefiksShape(t *testing.T) {
	body, err := traefikJSON(traefikRoutes(t), map[string]bool{"web": true, "api": true}, "http://reaper:9100/")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"http":{"routers":{"reaper-api":{"rule":"(Host(` + "`example.com`" + `) && (Path(` + "`/api`" + `) || PathPrefix(` + "`/api/`" + `)))","service":"reaper-api","middlewares":["reaper-auth"]},` +
		`"reaper-web":{"rule":"Host(` + "`app.example.com`" + `) || HostRegexp(` + "`^[^.]+\\\\.apps\\\\.example\\\\.com$`" + `)","service":"reaper-web","middlewares":["reaper-auth"]}},` +
		`"services":{"reaper-api":{"loadBalancer":{"servers":[{"url":"http://10.0.0.6:80","weight":3},{"url":"http://10.0.0.7:80","weight":1}]}},` +
		`"reaper-web":{"loadBalancer":{"servers":[{"url":"http://10.0.0.5:3000"}]}}},` +
		`"middlewares":{"reaper-auth":{"forwardAuth":{"address":"http://reaper:9100/auth"}}}}}` + "\n"
	if string(body) != want {
		t.Errorf("got\n%s\nwant\n%s", body, want)
	}
	var shape map[string]map[string]map[string]any
	if err := json.Unmarshal(body, &shape); err != nil {
		t.Fatal(err)
	}
	if _, ok := shape["http"]["routers"]["reaper-hidden"]; ok {
		t.Error("a route not marked for Traefik was given")
	}
}

// Traefik re-applies a configuration whose hash changed: the same routes give
// the same bytes, every time.
func TestServer_TraefikAnswersTheSameBytes(t *testing.T) {
	routes := traefikRoutes(t)
	s := New(nil, Options{Routes: func() []*plugin.Route { return routes }, TraefikRoutes: []string{"web", "api"}, AuthURL: "http://127.0.0.1:9100"})
	var first string
	for i := range 20 {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/traefik", nil)
		r.RemoteAddr = "127.0.0.1:4000"
		s.ServeHTTP(w, r)
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%d %v", w.Code, w.Header())
		}
		if i == 0 {
			first = w.Body.String()
		} else if w.Body.String() != first {
			t.Fatalf("answer %d differs:\n%s\n%s", i, w.Body.String(), first)
		}
	}
}

// A route whose app's label asks for Traefik is given as a configured one is;
// the labeled ids' order does not change the bytes; a route no longer labeled
// goes.
func TestServer_TraefikGivesTheLabeledRoutesToo(t *testing.T) {
	routes := traefikRoutes(t)
	labeled := []string{"hidden", "api"}
	s := New(nil, Options{Routes: func() []*plugin.Route { return routes }, TraefikRoutes: []string{"web"},
		TraefikLabeled: func() []string { return labeled }, AuthURL: "http://127.0.0.1:9100"})
	get := func() string {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/traefik", nil)
		r.RemoteAddr = "127.0.0.1:4000"
		s.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		return w.Body.String()
	}
	routers := func(body string) []string {
		var c struct {
			HTTP struct{ Routers map[string]any } `json:"http"`
		}
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatal(err)
		}
		var names []string
		for n := range c.HTTP.Routers {
			names = append(names, n)
		}
		slices.Sort(names)
		return names
	}
	first := get()
	if got, want := routers(first), []string{"reaper-api", "reaper-hidden", "reaper-web"}; !slices.Equal(got, want) {
		t.Errorf("routers %v, want %v", got, want)
	}
	labeled = []string{"api", "hidden"}
	if again := get(); again != first {
		t.Errorf("the same routes in another order gave other bytes:\n%s\n%s", again, first)
	}
	labeled = nil
	if got, want := routers(get()), []string{"reaper-web"}; !slices.Equal(got, want) {
		t.Errorf("once the labels went: routers %v, want %v", got, want)
	}
}

// Traefik's dynamic configuration as its HTTP provider decodes it, the parts
// /traefik may write, with every key Traefik v3.7 knows there
// (pkg/config/dynamic: Router, Service, ServersLoadBalancer, Server,
// Middleware.ForwardAuth): a key Traefik does not know fails the decoding.
type (
	tfConfig struct {
		HTTP *struct {
			Routers map[string]struct {
				EntryPoints []string        `json:"entryPoints"`
				Middlewares []string        `json:"middlewares"`
				Service     string          `json:"service"`
				Rule        string          `json:"rule"`
				ParentRefs  []string        `json:"parentRefs"`
				RuleSyntax  string          `json:"ruleSyntax"`
				Priority    int             `json:"priority"`
				TLS         json.RawMessage `json:"tls"`
				Observ      json.RawMessage `json:"observability"`
			} `json:"routers"`
			Services map[string]struct {
				LoadBalancer *struct {
					Sticky  json.RawMessage `json:"sticky"`
					Servers []struct {
						URL          string `json:"url"`
						Weight       *int   `json:"weight"`
						PreservePath bool   `json:"preservePath"`
					} `json:"servers"`
					Strategy           string          `json:"strategy"`
					HealthCheck        json.RawMessage `json:"healthCheck"`
					PassiveHealthCheck json.RawMessage `json:"passiveHealthCheck"`
					PassHostHeader     *bool           `json:"passHostHeader"`
					ResponseForwarding json.RawMessage `json:"responseForwarding"`
					ServersTransport   string          `json:"serversTransport"`
				} `json:"loadBalancer"`
			} `json:"services"`
			Middlewares map[string]struct {
				ForwardAuth *struct {
					Address                  string          `json:"address"`
					TLS                      json.RawMessage `json:"tls"`
					TrustForwardHeader       bool            `json:"trustForwardHeader"`
					AuthResponseHeaders      []string        `json:"authResponseHeaders"`
					AuthResponseHeadersRegex string          `json:"authResponseHeadersRegex"`
					AuthRequestHeaders       []string        `json:"authRequestHeaders"`
					MaxResponseBodySize      *int64          `json:"maxResponseBodySize"`
					AddAuthCookiesToResponse []string        `json:"addAuthCookiesToResponse"`
					HeaderField              string          `json:"headerField"`
					ForwardBody              bool            `json:"forwardBody"`
					MaxBodySize              *int64          `json:"maxBodySize"`
					PreserveLocationHeader   bool            `json:"preserveLocationHeader"`
					PreserveRequestMethod    bool            `json:"preserveRequestMethod"`
					AuthSigninURL            string          `json:"authSigninURL"`
				} `json:"forwardAuth"`
			} `json:"middlewares"`
		} `json:"http"`
	}
)

// The answer decodes as Traefik's configuration with no key Traefik does not
// know, and holds together as Traefik checks it: each router's service and
// middlewares exist, each service has servers whose URLs are absolute http
// URLs, the middleware asks an absolute URL.
func TestTraefikJSON_DecodesAsTraefiksConfiguration(t *testing.T) {
	body, err := traefikJSON(traefikRoutes(t), map[string]bool{"web": true, "api": true, "hidden": true}, "http://reaper:9100")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var c tfConfig
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("not Traefik's shape: %v\n%s", err, body)
	}
	if c.HTTP == nil || len(c.HTTP.Routers) != 3 {
		t.Fatalf("routers: %s", body)
	}
	for name, r := range c.HTTP.Routers {
		svc, ok := c.HTTP.Services[r.Service]
		if !ok || svc.LoadBalancer == nil || len(svc.LoadBalancer.Servers) == 0 || r.Rule == "" {
			t.Errorf("router %s: service %q missing or empty, rule %q", name, r.Service, r.Rule)
			continue
		}
		for _, srv := range svc.LoadBalancer.Servers {
			if u, err := url.Parse(srv.URL); err != nil || u.Scheme != "http" || u.Host == "" {
				t.Errorf("router %s: server %q", name, srv.URL)
			}
		}
		for _, m := range r.Middlewares {
			fa := c.HTTP.Middlewares[m].ForwardAuth
			if fa == nil {
				t.Errorf("router %s: middleware %q missing", name, m)
			} else if u, err := url.Parse(fa.Address); err != nil || !u.IsAbs() || u.Path != PathAuth {
				t.Errorf("middleware %s: address %q", m, fa.Address)
			}
		}
	}
}

package forwardauth

import (
	"context"
	"encoding/json"
	"net/http/httptest"
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

package plugin

import (
	"slices"
	"testing"
	"time"
)

func TestRouteConfig_DecodeSetsDefaults(t *testing.T) {
	routes, err := parseRoutes(t, `
routes:
  - id: hello
    frontend: {domains: [hello.localhost]}
    backend: {targets: ["http://127.0.0.1:3001", {url: "http://127.0.0.1:3002", weight: 2}]}
    plugins:
      - plugin: test_steps
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := routes[0]
	if r.Name != "hello" || !r.Enabled || !r.Frontend.StripPath {
		t.Errorf("defaults: name=%q enabled=%v strip_path=%v", r.Name, r.Enabled, r.Frontend.StripPath)
	}
	want := []Target{{URL: "http://127.0.0.1:3001", Weight: 1}, {URL: "http://127.0.0.1:3002", Weight: 2}}
	if !slices.Equal(r.Backend.Targets, want) {
		t.Errorf("targets = %+v, want %+v", r.Backend.Targets, want)
	}
	to := r.Backend.Timeouts
	if to.Connect.D() != 10*time.Second || to.ResponseHeader.D() != 60*time.Second || to.Idle.D() != 90*time.Second {
		t.Errorf("timeouts = %+v", to)
	}
	if !r.Plugins[0].Enabled {
		t.Error("a plugin is enabled by default")
	}
}

func TestRouteConfig_DecodeExplicitValues(t *testing.T) {
	routes, err := parseRoutes(t, `
routes:
  - id: api
    name: The API
    enabled: false
    frontend: {domains: [a.test], strip_path: false, methods: [get]}
    backend: {targets: ["http://127.0.0.1:1"], root: /v2, timeouts: {connect: 1, response_header: 2s, idle: 0}}
    plugins:
      - {plugin: test_steps, enabled: false, include: ["/a.*"], exclude: ["/b"], config: {tag: x}}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := routes[0]
	if r.Name != "The API" || r.Enabled || r.Frontend.StripPath || r.Backend.Root != "/v2" {
		t.Errorf("decoded %+v", r)
	}
	if to := r.Backend.Timeouts; to.Connect.D() != time.Second || to.ResponseHeader.D() != 2*time.Second || to.Idle != 0 {
		t.Errorf("timeouts = %+v", to)
	}
	p := r.Plugins[0]
	if p.Enabled || p.Include[0] != "/a.*" || p.Exclude[0] != "/b" || p.Config.Kind == 0 {
		t.Errorf("plugin = %+v", p)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// importFile runs `reaper import-otoroshi file` and returns its stdout and stderr.
func importFile(t *testing.T, file string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"import-otoroshi", file}, nil, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// checkImported runs the real `reaper check` on an imported configuration, with
// the credential variable the output refers to set, and fails the test unless it
// passes.
func checkImported(t *testing.T, out string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "imported.yaml")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == "CLEVER_CLOUD_API_TOKEN" {
			return "a-token-for-the-check", true
		}
		return "", false
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"check", "--config", file}, env, &stdout, &stderr); err != nil {
		t.Fatalf("reaper check on the imported configuration: %v\n%s\n%s", err, stderr.String(), out)
	}
	if !strings.Contains(stdout.String(), "ok (") || !strings.Contains(stdout.String(), "driver clevercloud") {
		t.Errorf("reaper check said %q", stdout.String())
	}
}

func TestImportOtoroshi_RouteList(t *testing.T) {
	out, stderr, err := importFile(t, "testdata/otoroshi-routes.json")
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	want := `# Imported from an Otoroshi export by reaper import-otoroshi.
# Check it with: reaper check --config FILE (CLEVER_CLOUD_API_TOKEN set)
# The Clever Cloud apps of the routes:
#   app_11111111-2222-3333-4444-555555555555 (routes route_1b2c3d)
paas:
  driver: clevercloud
  clevercloud:
    # An API token (clever tokens create reaper), from the environment: never write it here.
    token: ${CLEVER_CLOUD_API_TOKEN}
    api_url: ${CLEVER_CLOUD_API_URL:-https://api-bridge.clever-cloud.com}
routes:
  - id: route_1b2c3d
    name: shop
    frontend:
      domains:
        - shop.example.com
        - shop.example.com/api
      strip_path: false
    backend:
      targets:
        - https://app-11111111-2222-3333-4444-555555555555.cleverapps.io
    plugins:
      - plugin: reaper
        exclude:
          - /static/.*
        config:
          app_id: app_11111111-2222-3333-4444-555555555555
          owner_id: orga_x
          grace_period: 1h
          fail_timeout: 15m
          allow_waiting_page: true
          api_behavior: unavailable
          ready_delay: 3s
          must_be_up_at:
            - days:
                - mon
                - fri
              start: "08:00"
              end: "19:00"
          timezone: Europe/Paris
          monitoring_filters:
            - source: user_agent
              regex: (?i)uptimerobot
  - id: route_2
    enabled: false
    frontend:
      domains:
        - blog.example.com
    backend:
      targets:
        - url: http://10.0.0.5:8080
          weight: 3
        - http://10.0.0.6
      root: /blog
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	// OverrideHost is dropped without a note: reaper sends the target's host.
	wantNotes := "not imported: route route_2: plugin cp:otoroshi.next.plugins.ApikeyCalls (reaper has no equivalent; add what you need by hand)\n"
	if stderr != wantNotes {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, wantNotes)
	}
	checkImported(t, out)
}

// TestImportOtoroshi_Shapes imports the same route from every shape understood:
// the configuration written is the same, and passes reaper check.
func TestImportOtoroshi_Shapes(t *testing.T) {
	want := `# Imported from an Otoroshi export by reaper import-otoroshi.
# Check it with: reaper check --config FILE (CLEVER_CLOUD_API_TOKEN set)
# The Clever Cloud apps of the routes:
#   app_11111111-2222-3333-4444-555555555555 (routes route_shop)
paas:
  driver: clevercloud
  clevercloud:
    # An API token (clever tokens create reaper), from the environment: never write it here.
    token: ${CLEVER_CLOUD_API_TOKEN}
    api_url: ${CLEVER_CLOUD_API_URL:-https://api-bridge.clever-cloud.com}
routes:
  - id: route_shop
    name: Shop
    frontend:
      domains:
        - shop.example.com
    backend:
      targets:
        - https://shop.example.com
    plugins:
      - plugin: reaper
        config:
          app_id: app_11111111-2222-3333-4444-555555555555
          grace_period: 30m
          api_behavior: hold # client_poll in the export: retired in the reference, which falls back to hold
`
	clientPoll := "changed: route route_shop: api_behavior client_poll is written as hold (the reference retired client_poll and falls back to hold)\n"
	for _, tc := range []struct{ file, notes string }{
		{"otoroshi-route.json", clientPoll},
		{"otoroshi-export.json", "not imported: 1 service descriptor (legacy services: convert them to routes in Otoroshi, then export again)\n" + clientPoll},
		{"otoroshi-resource.json", clientPoll},
		{"otoroshi-resources.json", "not imported: [0]: a resource of kind \"ApiKey\" (a key) (reaper imports routes only)\n" + clientPoll},
		{"otoroshi-resources.yaml", "not imported: document 1: a resource of kind \"ApiKey\" (a key) (reaper imports routes only)\n" + clientPoll},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out, stderr, err := importFile(t, filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatalf("import: %v\n%s", err, stderr)
			}
			if out != want {
				t.Errorf("output:\n%s\nwant:\n%s", out, want)
			}
			if stderr != tc.notes {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, tc.notes)
			}
			if strings.Contains(out, "never-read") {
				t.Error("a value of the export's api keys reached the output")
			}
			checkImported(t, out)
		})
	}
}

// TestImportOtoroshi_AppByHost: a reaper route with no app_id and no
// cleverapps.io target is written as it is; the comment says its app is found by
// its domains, and reaper check takes it.
func TestImportOtoroshi_AppByHost(t *testing.T) {
	file := filepath.Join(t.TempDir(), "route.json")
	route := `{"id": "blog", "frontend": {"domains": ["blog.example.com"]},
	  "backend": {"targets": [{"hostname": "blog.example.com", "port": 443, "tls": true}]},
	  "plugins": [{"plugin": "cp:otoroshi_plugins.com.cloud.apim.otoroshi.extensions.clevercloudreaper.CleverCloudReaper", "config": {"grace_period": 600}}]}`
	if err := os.WriteFile(file, []byte(route), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := importFile(t, file)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "#   found at start by their domains among the apps' vhosts: routes blog\n") {
		t.Errorf("the comment does not say the app is found by the route's domains:\n%s", out)
	}
	if strings.Contains(out, "app_id") {
		t.Errorf("an app_id was invented:\n%s", out)
	}
	checkImported(t, out)
}

func TestImportOtoroshi_Errors(t *testing.T) {
	const shapes = `expected a route, a list of routes, an Otoroshi export with "routes", or kind/spec resources`
	for _, tc := range []struct{ name, in, want string }{
		{"unknown object", `{"c": 1, "a": 2, "b": 3}`, "an object with keys a, b, c: " + shapes},
		{"empty object", `{}`, "an empty object: " + shapes},
		{"string", `"routes"`, "a string: " + shapes},
		{"number", `42`, "a number: " + shapes},
		{"list of numbers", `[1]`, "[0]: a number: " + shapes},
		{"list of other objects", `[{"clientId": "k"}]`, "[0]: an object with keys clientId: expected a route or a kind/spec resource"},
		{"routes not a list", `{"label": "x", "routes": 3}`, `an export whose "routes" is a number, not a list`},
		{"bad route in export", `{"routes": [{"id": "r", "frontend": {"domains": "x"}}]}`, "routes[0]: route r is not an Otoroshi route"},
		{"another kind", `{"kind": "ApiKey", "metadata": {"name": "k"}, "spec": {}}`, `a resource of kind "ApiKey" (k): ` + shapes},
		{"spec not an object", `{"kind": "Route", "spec": []}`, "a Route resource whose spec is a list, not an object"},
		{"no id", `{"name": "no id", "frontend": {"domains": ["a.example"]}}`, "route 0 has no id"},
		{"no route", `[]`, "no route found"},
		{"empty file", "  \n", "the file is empty: " + shapes},
		{"bad JSON", `{"id": `, "not valid JSON"},
		{"bad YAML", "a: [", "neither JSON nor YAML (document 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "in.json")
			if err := os.WriteFile(file, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := importFile(t, file)
			if err != exitCode(1) || !strings.Contains(stderr, tc.want) {
				t.Errorf("err %v, stderr %q: want exit 1 and %q", err, stderr, tc.want)
			}
			if out != "" {
				t.Errorf("something was written: %q", out)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"import-otoroshi"}, nil, &stdout, &stderr); err != exitCode(2) {
		t.Errorf("no file: %v", err)
	}
}

func TestFormatSeconds(t *testing.T) {
	for in, want := range map[float64]string{3600: "1h", 900: "15m", 90: "1m30s", 10: "10s", 3: "3s", 0: "0s", 0.5: "500ms", 5400: "1h30m", 3605: "1h0m5s"} {
		if got := formatSeconds(in); got != want {
			t.Errorf("formatSeconds(%v) = %q, want %q", in, got, want)
		}
	}
}

package config

import (
	"slices"
	"strings"
	"testing"
)

func TestBusyDisagreements(t *testing.T) {
	const a, b = "http://127.0.0.1:3001/busy", "http://127.0.0.1:3002/busy"
	routes := busyURLs{
		"worker": {path: "routes[1].plugins[0].config.busy_url", addr: a},
		"tokens": {path: "routes[2].plugins[0].config.busy_url", addr: a + "?token=one"},
	}
	for _, tc := range []struct {
		name     string
		declared []appBusy
		want     []string
	}{
		{"no declared busy_url", []appBusy{{"worker", "paas.apps[0].busy_url", ""}}, nil},
		{"the same", []appBusy{{"worker", "paas.apps[0].busy_url", a}}, nil},
		{"no route sets one", []appBusy{{"other", "paas.apps[0].busy_url", b}}, nil},
		{"they differ", []appBusy{{"worker", "paas.docker.apps[3].busy_url", b}}, []string{
			`routes[1].plugins[0].config.busy_url: http://127.0.0.1:3001/busy differs from the busy_url of app "worker" ` +
				`at paas.docker.apps[3].busy_url, http://127.0.0.1:3002/busy: the route's is used, with the route's busy_max ` +
				`(a route's busy_url wins over the app's own)`}},
		{"only in their queries, which are not shown", []appBusy{{"tokens", "paas.apps[1].busy_url", a + "?token=two"}}, []string{
			`routes[2].plugins[0].config.busy_url: http://127.0.0.1:3001/busy differs from the busy_url of app "tokens" ` +
				`at paas.apps[1].busy_url, http://127.0.0.1:3001/busy; they differ in their query, not shown: the route's is used, ` +
				`with the route's busy_max (a route's busy_url wins over the app's own)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := busyDisagreements(routes, tc.declared)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
			for _, w := range got {
				if strings.Contains(w, "token=") {
					t.Errorf("the warning shows a query: %s", w)
				}
			}
		})
	}
}

// reaper check warns (the file is valid) when a route's busy_url and the
// app's own entry's differ, for every driver section that declares apps; the
// admin token being unset does not hide it.
func TestWarnings_ARoutesBusyURLOverTheAppsOwn(t *testing.T) {
	const src = `
node: {id: n1}
paas:
  driver: [process, docker]
  apps:
    - {id: worker, command: ["./worker"], ready: {tcp: "127.0.0.1:3001"}, busy_url: "http://127.0.0.1:3001/busy?token=s3cret"}
    - {id: same, command: ["./same"], ready: {tcp: "127.0.0.1:3003"}, busy_url: "http://127.0.0.1:3003/busy"}
  docker:
    apps:
      - {id: boxed, container: boxed-1, busy_url: "http://127.0.0.1:3004/busy"}
routes:
  - id: w
    frontend: {domains: [w.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins: [{plugin: reaper, config: {app_id: worker, busy_url: "http://127.0.0.1:3001/jobs?token=s3cret"}}]
  - id: s
    frontend: {domains: [s.localhost]}
    backend: {targets: ["http://127.0.0.1:3003"]}
    plugins: [{plugin: reaper, config: {app_id: same, busy_url: "http://127.0.0.1:3003/busy"}}]
  - id: b
    frontend: {domains: [b.localhost]}
    backend: {targets: ["http://127.0.0.1:3004"]}
    plugins: [{plugin: reaper, config: {app_id: boxed, busy_url: "http://127.0.0.1:3005/busy"}}]
`
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var busy []string
	for _, w := range cfg.Warnings() {
		if strings.Contains(w, "busy_url") {
			busy = append(busy, w)
		}
		if strings.Contains(w, "s3cret") {
			t.Errorf("a warning shows the token: %s", w)
		}
	}
	if len(busy) != 2 ||
		!strings.HasPrefix(busy[0], `routes[0].plugins[0].config.busy_url: http://127.0.0.1:3001/jobs differs from the busy_url of app "worker" at paas.apps[0].busy_url, http://127.0.0.1:3001/busy: the route's is used`) ||
		!strings.HasPrefix(busy[1], `routes[2].plugins[0].config.busy_url: http://127.0.0.1:3005/busy differs from the busy_url of app "boxed" at paas.docker.apps[0].busy_url, http://127.0.0.1:3004/busy: the route's is used`) {
		t.Errorf("busy_url warnings:\n%s", strings.Join(busy, "\n"))
	}
}

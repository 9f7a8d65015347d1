package config

import (
	"strings"
	"testing"
)

// Two routes on one app give one busy_url; a bad one is named at its path, and
// neither message shows the URL (its query may hold a token).
func TestParse_BusyURL(t *testing.T) {
	src := func(url1, url2 string) string {
		return `
node: {id: n1}
paas:
  driver: process
  apps:
    - {id: worker, command: ["./worker"], ready: {tcp: "127.0.0.1:3001"}}
routes:
  - id: a
    frontend: {domains: [a.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins: [{plugin: reaper, config: {app_id: worker, busy_url: "` + url1 + `", busy_max: 30m}}]
  - id: b
    frontend: {domains: [b.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins: [{plugin: reaper, config: {app_id: worker, busy_url: "` + url2 + `"}}]
`
	}
	if _, err := Parse([]byte(src("http://127.0.0.1:3001/busy?token=s3cret", "http://127.0.0.1:3001/busy?token=s3cret")), env(nil)); err != nil {
		t.Fatalf("the same busy_url on both routes: %v", err)
	}
	_, err := Parse([]byte(src("http://127.0.0.1:3001/busy?token=s3cret", "http://127.0.0.1:3002/busy?token=s3cret")), env(nil))
	if err == nil || !strings.Contains(err.Error(), `routes[1].plugins[0].config.busy_url: differs from the busy_url of app "worker" at routes[0].plugins[0].config.busy_url`) {
		t.Fatalf("two busy_urls for one app: %v", err)
	}
	_, err = Parse([]byte(src("127.0.0.1:3001/busy?token=s3cret", "")), env(nil))
	if err == nil || !strings.Contains(err.Error(), "routes[0].plugins[0].config.busy_url: is not an http(s) URL") {
		t.Fatalf("a bad busy_url: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the token: %v", err)
	}
}

// An app's own busy_url and busy_max, on its driver's entry (a route-less
// worker has no route to set them on), are read and checked at their paths.
func TestParse_AppBusyURL(t *testing.T) {
	cfg, err := Parse([]byte(`
node: {id: n1}
paas:
  driver: process
  apps:
    - {id: worker, command: ["./worker"], ready: {tcp: "127.0.0.1:3001"}, busy_url: "http://127.0.0.1:3001/busy", busy_max: 2h}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.PaaS.Apps[0]; a.BusyURL != "http://127.0.0.1:3001/busy" || a.BusyMax.D().Hours() != 2 {
		t.Errorf("paas.apps[0]: busy_url %q, busy_max %s", a.BusyURL, a.BusyMax.D())
	}
	_, err = Parse([]byte(`
node: {id: n1}
paas:
  driver: process
  apps:
    - {id: worker, command: ["./worker"], ready: {tcp: "127.0.0.1:3001"}, busy_url: "http://u:s3cret@127.0.0.1:3001/busy", busy_max: 0.5}
`), env(nil))
	for _, want := range []string{
		"paas.apps[0].busy_url: must not hold a user or password",
		"paas.apps[0].busy_max: 500ms is not from 1s to 168h0m0s",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the password: %v", err)
	}
	_, err = Parse([]byte(`
paas:
  driver: docker
  docker:
    host: unix:///run/docker-proxy.sock
    apps:
      - {id: worker, container: worker-1, busy_url: "tcp://127.0.0.1:3001/busy", busy_max: 169h}
`), env(nil))
	for _, want := range []string{
		"paas.docker.apps[0].busy_url: is not an http(s) URL",
		"paas.docker.apps[0].busy_max: 169h0m0s is not from 1s to 168h0m0s",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

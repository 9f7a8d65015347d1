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

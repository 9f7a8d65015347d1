package config

import (
	"strings"
	"testing"
)

// With the Clever Cloud driver, a reaper route may leave app_id out when it has
// an exact domain, which the driver looks up among the apps' vhosts at start;
// with wildcard domains only, there is nothing to look up.
func TestParse_CleverCloudAppFoundByDomain(t *testing.T) {
	head := "paas: {driver: clevercloud, clevercloud: {token: a-token}}\n"
	route := func(domain string) string {
		return `
  - id: r
    frontend: {domains: ["` + domain + `"]}
    backend: {targets: ["https://shop.example.com"]}
    plugins: [{plugin: reaper, config: {grace_period: 1h}}]
`
	}
	src := head + "events: {webhooks: [{url: 'https://hooks.example.com/x', apps: [app_00000000-0000-4000-8000-000000000001]}]}\nroutes:" + route("shop.example.com/api")
	if _, err := Parse([]byte(src), env(nil)); err != nil {
		t.Errorf("a route with an exact domain and no app_id: %v", err)
	}
	_, err := Parse([]byte(head+"routes:"+route("*.example.com")), env(nil))
	want := "routes[0].plugins[0].config.app_id: is required (no backend target is an app-<uuid>.cleverapps.io domain to guess it from, and no frontend domain is an exact host to look up among the apps' vhosts)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("wildcard domain only: %v\nwant %s", err, want)
	}
}

package config

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/webhook"
)

// webApp is a process app "web" behind a route, for the webhooks' apps filter.
const webApp = `
paas: {apps: [{id: web, command: [x], ready: {tcp: "127.0.0.1:1"}}]}
routes:
  - id: r
    frontend: {domains: [a.test]}
    backend: {targets: ["http://127.0.0.1:1"]}
    plugins: [{plugin: reaper, config: {app_id: web}}]
`

func TestParse_Events(t *testing.T) {
	src := webApp + `
events:
  alert_wake_after: 60s
  webhooks:
    - url: https://hooks.example.com/reaper
      secret: ${WEBHOOK_SECRET}
      events: [status, slow_wake]
      apps: [web]
    - name: chat
      url: ${SLACK_URL}
      format: slack
      timeout: 2s
      max_age: 1h
      queue_limit: 500
`
	cfg, err := Parse([]byte(src), env(map[string]string{"WEBHOOK_SECRET": "0123456789abcdef0123", "SLACK_URL": "https://hooks.slack.com/services/T0/B0/XYZ"}))
	if err != nil {
		t.Fatal(err)
	}
	ev := cfg.Events
	if ev.AlertWakeAfter.D() != time.Minute || len(ev.Webhooks) != 2 {
		t.Fatalf("events: %+v", ev)
	}
	a, b := ev.Webhooks[0], ev.Webhooks[1]
	if a.ResolvedName() != "hooks.example.com" || a.Secret.Reveal() != "0123456789abcdef0123" || strings.Join(a.Events, ",") != "status,slow_wake" ||
		strings.Join(a.Apps, ",") != "web" || a.Format != "" {
		t.Errorf("first webhook: %+v", a)
	}
	if b.ResolvedName() != "chat" || b.URL.Reveal() != "https://hooks.slack.com/services/T0/B0/XYZ" || b.Format != webhook.FormatSlack ||
		b.Timeout.D() != 2*time.Second || b.MaxAge.D() != time.Hour || b.QueueLimit != 500 {
		t.Errorf("second webhook: %+v", b)
	}
}

func TestParse_EventsErrorsWordForWord(t *testing.T) {
	src := webApp + `
events:
  webhooks:
    - url: ftp://ftp.example.com/services/T0/B0/s3cr3t-path
      events: [status, up, status, slow_wake]
      apps: [web, wbe, ""]
      secret: short-s3cr3t
      timeout: 2m
      max_age: 10s
      format: xml
      queue_limit: 1000000
    - {name: "bad name!", url: "https:///nohost"}
    - {url: "https://hooks.example.com/a"}
    - {url: "https://hooks.example.com/b"}
    - {}
`
	want := []string{
		`events.webhooks[0].url: must be an http:// or https:// URL`,
		`events.webhooks[0].events[1]: "up" is not a type of event (use status, error, hold, release, hold_expired, sleep, wake_ask, wake, slow_wake)`,
		`events.webhooks[0].events[2]: "status" is listed twice`,
		`events.webhooks[0].apps[2]: an app id cannot be empty`,
		`events.webhooks[0].secret: must be at least 16 characters (a random string: openssl rand -hex 32)`,
		`events.webhooks[0].timeout: must be at most 1m0s, not 2m0s`,
		`events.webhooks[0].max_age: must be from 1m0s to 720h0m0s (30 days), not 10s`,
		`events.webhooks[0].format: "xml" is not a format (use json or slack)`,
		`events.webhooks[0].queue_limit: must be from 1 to 100000 (0: 10000), not 1000000`,
		`events.webhooks[1].url: has no host`,
		`events.webhooks[1].name: "bad name!": use 1 to 64 letters, digits, '.', '_' or '-'`,
		`events.webhooks[4].url: is required: where to POST the events`,
		`events.webhooks[0].events: slow_wake needs events.alert_wake_after (how long a wake may take before it is slow)`,
		`events.webhooks[3].url: the name "hooks.example.com" is events.webhooks[2]'s already (a webhook's default name is its URL's host): give each a name`,
		`events.webhooks[0].apps[1]: "wbe" is not the app_id of any route's reaper plugin`,
	}
	got := problems(t, src)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range got {
		if strings.Contains(line, "s3cr3t") {
			t.Errorf("a secret or the URL shows in %q", line)
		}
	}
}

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// The forward-auth listener (node.auth_listen, package forwardauth), asked as
// Caddy's forward_auth and Traefik's forwardAuth ask: a GET /auth with the
// original request in X-Forwarded-* headers.

// startAuthReaper runs reaper with the forward-auth listener on a free port,
// node lines (YAML, indented as node's keys) added, and returns it with the
// listener's address.
func startAuthReaper(t *testing.T, nodeLines string, apps ...app) (*reaperProc, string) {
	t.Helper()
	auth := freeport.Addr(t)
	cfg := strings.Replace(reaperConfig(apps...), "  data_dir:", "  auth_listen: "+auth+"\n"+nodeLines+"  data_dir:", 1)
	p := startReaper(t, t.TempDir(), cfg)
	testwait.For(t, 10*time.Second, "every app Down", func() bool {
		n := 0
		for _, l := range p.logs() {
			if l["msg"] == "app status changed" && l["to"] == "Down" {
				n++
			}
		}
		return n >= len(apps)
	})
	return p, auth
}

// authCall asks the listener at auth about a request (method, host, uri), with
// the client's headers (pairs) as a proxy copies them.
func authCall(t *testing.T, auth, path, method, host, uri string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+auth+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-Method", method)
	req.Header.Set("X-Forwarded-Host", host)
	req.Header.Set("X-Forwarded-Uri", uri)
	req.Header.Set("X-Forwarded-Proto", "http")
	req.Header.Set("X-Forwarded-For", "192.0.2.7")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readAll(t, resp)
}

func allowed(resp *http.Response) bool {
	return resp.StatusCode == 200 && resp.Header.Get("Reaper-Access") == "allow"
}

func TestForwardAuth_AnswersAsTheGatewayWould(t *testing.T) {
	web := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`,
		plugin: `allow_waiting_page: true, monitoring_filters: [{source: user_agent, regex: "(?i)uptimerobot"}]`}
	api := app{id: "api", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`, plugin: `api_behavior: unavailable`}
	p, auth := startAuthReaper(t, "", web, api)

	// A monitor: the monitoring 200, never the allow, and no wake.
	resp, body := authCall(t, auth, "/auth", "GET", "web.test", "/", "User-Agent", "UptimeRobot/2.0")
	if resp.StatusCode != 200 || allowed(resp) || !strings.Contains(body, `"monitoring":true`) || resp.Header.Get("CleverCloud-Reaper-Status") != "Down" {
		t.Errorf("monitor: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if starts(p, "web") != 0 {
		t.Fatal("a monitor's auth call woke the app")
	}

	// unavailable: the 503 with Retry-After at once, and the app wakes.
	resp, body = authCall(t, auth, "/auth", "POST", "api.test", "/orders?x=1")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "30" || !strings.Contains(body, "the application is waking up, retry later") {
		t.Errorf("unavailable: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	testwait.For(t, 15*time.Second, "api allowed once up", func() bool {
		resp, _ := authCall(t, auth, "/auth", "POST", "api.test", "/orders")
		return allowed(resp)
	})

	// A browser: the waiting page with its 503; once up, the request may go.
	resp, body = authCall(t, auth, "/auth", "GET", "web.test", "/", "Accept", "text/html")
	if resp.StatusCode != 503 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(body, "<html") {
		t.Errorf("browser: %d %v", resp.StatusCode, resp.Header)
	}
	testwait.For(t, 15*time.Second, "web allowed once up", func() bool {
		resp, _ := authCall(t, auth, "/auth", "GET", "web.test", "/", "Accept", "text/html")
		return allowed(resp)
	})
	if got := starts(p, "web"); got != 1 {
		t.Errorf("web starts = %d, want 1", got)
	}
	// An unknown host: the gateway's 404, never an allow.
	if resp, _ := authCall(t, auth, "/auth", "GET", "nope.test", "/"); resp.StatusCode != 404 {
		t.Errorf("unknown host: %d", resp.StatusCode)
	}
}

func TestForwardAuth_HoldsUntilUpThenAllows(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`}
	p, auth := startAuthReaper(t, "", a)
	start := time.Now()
	resp, body := authCall(t, auth, "/auth", "POST", "web.test", "/api", "Accept", "application/json")
	if !allowed(resp) || body != "" {
		t.Fatalf("held call: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if time.Since(start) < time.Second {
		t.Errorf("allowed after %s, before the app's 1s boot", time.Since(start))
	}
	code, _, _ := getApp(t, p, "web.test")
	if code != 200 {
		t.Errorf("the app is not up once its auth call was allowed: %d", code)
	}
}

func TestForwardAuth_HoldEndsAtAuthHoldMax(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1h"`}
	_, auth := startAuthReaper(t, "  auth_hold_max: 1s\n", a)
	start := time.Now()
	resp, body := authCall(t, auth, "/auth", "GET", "web.test", "/", "Accept", "application/json")
	took := time.Since(start)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "still waking up") {
		t.Errorf("past auth_hold_max: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if took < time.Second || took > 15*time.Second {
		t.Errorf("answered after %s: auth_hold_max is 1s, the route's fail_timeout 20s", took)
	}
}

func TestForwardAuth_UntrustedCallerGets403(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t)}
	p, auth := startAuthReaper(t, "  auth_trusted_proxies: [10.0.0.0/8]\n", a)
	resp, body := authCall(t, auth, "/auth", "GET", "web.test", "/", "Accept", "text/html")
	if resp.StatusCode != 403 || !strings.Contains(body, "auth_trusted_proxies") {
		t.Errorf("from 127.0.0.1: %d %s", resp.StatusCode, body)
	}
	if starts(p, "web") != 0 {
		t.Error("an untrusted caller woke the app")
	}
}

// GET /traefik on a running node: the routes marked for Traefik, behind the
// forwardAuth middleware that asks this listener's /auth.
func TestForwardAuth_TraefikProviderGivesTheMarkedRoutes(t *testing.T) {
	web := app{id: "web", addr: freeport.Addr(t)}
	api := app{id: "api", addr: freeport.Addr(t)}
	_, auth := startAuthReaper(t, "  auth_traefik_routes: [web]\n", web, api)
	get := func() string {
		resp, err := http.Get("http://" + auth + "/traefik")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("/traefik: %d", resp.StatusCode)
		}
		return readAll(t, resp)
	}
	body := get()
	var c struct {
		HTTP struct {
			Routers map[string]struct {
				Rule, Service string
				Middlewares   []string
			}
			Services map[string]struct {
				LoadBalancer struct{ Servers []struct{ URL string } } `json:"loadBalancer"`
			}
			Middlewares map[string]struct {
				ForwardAuth struct{ Address string } `json:"forwardAuth"`
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	r, ok := c.HTTP.Routers["reaper-web"]
	if !ok || len(c.HTTP.Routers) != 1 || r.Rule != "Host(`web.test`)" || r.Service != "reaper-web" || len(r.Middlewares) != 1 || r.Middlewares[0] != "reaper-auth" {
		t.Errorf("routers: %s", body)
	}
	if s := c.HTTP.Services["reaper-web"].LoadBalancer.Servers; len(s) != 1 || s[0].URL != "http://"+web.addr {
		t.Errorf("services: %s", body)
	}
	if a := c.HTTP.Middlewares["reaper-auth"].ForwardAuth.Address; a != "http://"+auth+"/auth" {
		t.Errorf("the middleware asks %q, want this listener's /auth", a)
	}
	if again := get(); again != body {
		t.Errorf("a second answer differs:\n%s\n%s", again, body)
	}
}

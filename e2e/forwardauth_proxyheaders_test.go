package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// Traefik and Envoy cannot run here: their auth calls are sent as each sends
// them (Traefik v3's pkg/middlewares/auth/forward.go, Envoy's
// ext_authz_http_impl.cc), header for header, to a running reaper.

// traefikCall asks as Traefik's forwardAuth middleware does for a client
// request (method, host, uri) over TLS: a GET of the address (the original
// method with preserveRequestMethod, and its body with forwardBody), the
// client's headers copied but hop-by-hop ones, the entry point's X-Forwarded-*
// and X-Real-Ip, then X-Forwarded-For (the client's address), -Method,
// -Proto, -Host and -Uri.
func traefikCall(t *testing.T, auth, method, host, uri, body string, client ...string) (*http.Response, string) {
	t.Helper()
	callMethod := http.MethodGet
	var rd *strings.Reader
	if body != "" { // preserveRequestMethod and forwardBody
		callMethod = method
		rd = strings.NewReader(body)
	} else {
		rd = strings.NewReader("")
	}
	req, err := http.NewRequest(callMethod, "http://"+auth+"/auth", rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(client); i += 2 {
		req.Header.Set(client[i], client[i+1])
	}
	req.Header.Set("X-Forwarded-Port", "443")
	req.Header.Set("X-Forwarded-Server", "traefik-1")
	req.Header.Set("X-Real-Ip", "198.51.100.9")
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	req.Header.Set("X-Forwarded-Method", method)
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-Host", host)
	req.Header.Set("X-Forwarded-Uri", uri)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readAll(t, resp)
}

// envoyCall asks as Envoy's HTTP ext_authz does with path_prefix /auth/envoy:
// the original method, the original path and query after the prefix, the
// original host as Host, Content-Length 0, and the allowed headers (here
// allowed_headers lists accept, user-agent, x-forwarded-for and
// x-forwarded-proto, and the reaper header), plus what Envoy's own client adds.
func envoyCall(t *testing.T, auth, method, host, uri string, client ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+auth+"/auth/envoy"+uri, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.ContentLength = 0
	req.Header.Set("Content-Length", "0")
	for i := 0; i+1 < len(client); i += 2 {
		req.Header.Set(client[i], client[i+1])
	}
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Envoy-Expected-Rq-Timeout-Ms", "30000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readAll(t, resp)
}

func TestForwardAuth_AsTraefikAsks(t *testing.T) {
	web := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`,
		plugin: `allow_waiting_page: true, monitoring_filters: [{source: user_agent, regex: "(?i)uptimerobot"}]`}
	api := app{id: "api", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`, plugin: `api_behavior: unavailable`}
	p, auth := startAuthReaper(t, "", web, api)

	// A monitor: the monitoring 200 (Traefik lets it through: see the docs),
	// never the go-ahead, and no wake.
	resp, body := traefikCall(t, auth, "GET", "web.test", "/health", "", "User-Agent", "UptimeRobot/2.0", "Accept", "*/*")
	if resp.StatusCode != 200 || allowed(resp) || !strings.Contains(body, `"monitoring":true`) || starts(p, "web") != 0 {
		t.Errorf("monitor: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// An API call, unavailable: the 503 Traefik relays, with Retry-After.
	resp, body = traefikCall(t, auth, "POST", "api.test", "/orders?x=1", "", "Accept", "application/json", "Cookie", "s=1")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "waking up") {
		t.Errorf("unavailable: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// preserveRequestMethod and forwardBody: the same answer; the body is not
	// the original request's business here.
	resp, _ = traefikCall(t, auth, "POST", "api.test", "/orders", `{"n":1}`, "Accept", "application/json", "Content-Type", "application/json")
	if resp.StatusCode != 503 && !allowed(resp) {
		t.Errorf("with the method and body: %d %v", resp.StatusCode, resp.Header)
	}
	testwait.For(t, 15*time.Second, "api allowed once up", func() bool {
		resp, _ := traefikCall(t, auth, "POST", "api.test", "/orders", "", "Accept", "application/json")
		return allowed(resp)
	})
	// A browser: the waiting page, 503, HTML.
	resp, body = traefikCall(t, auth, "GET", "web.test", "/", "", "Accept", "text/html,application/xhtml+xml", "User-Agent", "Mozilla/5.0")
	if resp.StatusCode != 503 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "<html") {
		t.Errorf("browser: %d %v", resp.StatusCode, resp.Header)
	}
	testwait.For(t, 15*time.Second, "web allowed once up", func() bool {
		resp, _ := traefikCall(t, auth, "GET", "web.test", "/", "", "Accept", "text/html")
		return allowed(resp)
	})
	// reaper's log is read from a pipe and may lag behind the app's answer:
	// its Up line first, then the starts before it are all there.
	testwait.For(t, 15*time.Second, "web's Up line in reaper's log", func() bool { return logIndex(p, statusChanged("web", "Up")) >= 0 })
	if n := starts(p, "web"); n != 1 {
		t.Errorf("web started %d times, want 1", n)
	}
}

func TestForwardAuth_AsEnvoyAsks(t *testing.T) {
	web := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`,
		plugin: `allow_waiting_page: true, monitoring_filters: [{source: user_agent, regex: "(?i)uptimerobot"}]`}
	api := app{id: "api", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`, plugin: `api_behavior: unavailable`}
	held := app{id: "held", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`}
	p, auth := startAuthReaper(t, "", web, api, held)

	// A monitor: 203 with the monitoring answer (a 200 would send it on to the
	// sleeping app), and no wake.
	resp, body := envoyCall(t, auth, "GET", "web.test", "/health", "User-Agent", "UptimeRobot/2.0")
	if resp.StatusCode != 203 || resp.Header.Get("Reaper-Answer-Status") != "200" || !strings.Contains(body, `"monitoring":true`) || starts(p, "web") != 0 {
		t.Errorf("monitor: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// unavailable: a 429 with the 503's body and Retry-After (a 5xx would be
	// Envoy's empty 403), the real status beside.
	resp, body = envoyCall(t, auth, "POST", "api.test", "/orders?x=1", "Accept", "application/json")
	if resp.StatusCode != 429 || resp.Header.Get("Reaper-Answer-Status") != "503" || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "waking up") {
		t.Errorf("unavailable: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	testwait.For(t, 15*time.Second, "api allowed once up", func() bool {
		resp, _ := envoyCall(t, auth, "POST", "api.test", "/orders", "Accept", "application/json")
		return resp.StatusCode == 200
	})
	// hold: held, then the 200 that lets Envoy send the request on.
	start := time.Now()
	if resp, body := envoyCall(t, auth, "PUT", "held.test", "/items/1", "Accept", "application/json"); resp.StatusCode != 200 || body != "" {
		t.Errorf("held call: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("allowed after %s, before the app's 1s boot", took)
	}
	// A browser: the waiting page, as a 429.
	resp, body = envoyCall(t, auth, "GET", "web.test", "/", "Accept", "text/html")
	if resp.StatusCode != 429 || resp.Header.Get("Reaper-Answer-Status") != "503" || !strings.Contains(body, "<html") {
		t.Errorf("browser: %d %v", resp.StatusCode, resp.Header)
	}
	testwait.For(t, 15*time.Second, "web allowed once up", func() bool {
		resp, _ := envoyCall(t, auth, "GET", "web.test", "/", "Accept", "text/html")
		return resp.StatusCode == 200
	})
	// An unknown host: the gateway's 404, relayed as it is.
	if resp, _ := envoyCall(t, auth, "GET", "nope.test", "/"); resp.StatusCode != 404 {
		t.Errorf("unknown host: %d", resp.StatusCode)
	}
	// reaper's log is read from a pipe and may lag behind the app's answer:
	// its Up line first, then the starts before it are all there.
	testwait.For(t, 15*time.Second, "web's Up line in reaper's log", func() bool { return logIndex(p, statusChanged("web", "Up")) >= 0 })
	if n := starts(p, "web"); n != 1 {
		t.Errorf("web started %d times, want 1", n)
	}
}

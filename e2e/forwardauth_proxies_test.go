package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// via sends a request to a proxy at front for host, with header pairs.
func via(front, method, host, path string, body io.Reader, header ...string) (*http.Response, error) {
	req, err := http.NewRequest(method, "http://"+front+path, body)
	if err != nil {
		return nil, err
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return http.DefaultClient.Do(req)
}

// proxiedApps are the apps of the proxy suites: a site with a waiting page
// and a monitoring filter, an API answered unavailable, one held, one for a
// crowd, and one with a short grace period.
func proxiedApps(t *testing.T) (web, api, held, crowdApp, busy app) {
	boot := `"--boot-delay", "1s"`
	web = app{id: "web", addr: freeport.Addr(t), flags: boot,
		plugin: `allow_waiting_page: true, monitoring_filters: [{source: user_agent, regex: "(?i)uptimerobot"}]`}
	api = app{id: "api", addr: freeport.Addr(t), flags: boot, plugin: `api_behavior: unavailable`}
	held = app{id: "held", addr: freeport.Addr(t), flags: boot}
	crowdApp = app{id: "crowd", addr: freeport.Addr(t), flags: boot}
	busy = app{id: "busy", addr: freeport.Addr(t)}
	return
}

// shortGrace gives the busy app's route a 3 s grace period.
func shortGrace(cfg string) string {
	i := strings.Index(cfg, "app_id: busy, grace_period: 60s")
	return cfg[:i] + strings.Replace(cfg[i:], "grace_period: 60s", "grace_period: 3s", 1)
}

// proxySuite checks what a client of a proxy in front of the forward-auth
// listener gets, the proxy at front.
func proxySuite(t *testing.T, p *reaperProc, front string) {
	// A monitor: 200 without waking anything, and never the app.
	resp, err := via(front, "GET", "web.test", "/", nil, "User-Agent", "UptimeRobot/2.0")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"monitoring":true`) {
		t.Errorf("monitor: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if starts(p, "web") != 0 {
		t.Fatal("a monitor woke the app")
	}

	// unavailable: 503 at once, with Retry-After; the app wakes all the same.
	start := time.Now()
	resp, err = via(front, "POST", "api.test", "/", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "30" ||
		!strings.Contains(body, "the application is waking up, retry later") || time.Since(start) > 900*time.Millisecond {
		t.Errorf("unavailable: %d %v %s after %s", resp.StatusCode, resp.Header, body, time.Since(start))
	}
	testwait.For(t, 15*time.Second, "api answers through the proxy", func() bool {
		resp, err := via(front, "GET", "api.test", "/", nil, "Accept", "application/json")
		if err != nil {
			return false
		}
		return strings.Contains(readAll(t, resp), `"name":"api"`) && resp.StatusCode == 200
	})

	// A browser: the waiting page, then the app.
	resp, err = via(front, "GET", "web.test", "/", nil, "Accept", "text/html")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 503 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(body, "<html") {
		t.Errorf("browser: %d %v", resp.StatusCode, resp.Header)
	}
	testwait.For(t, 15*time.Second, "the browser gets the app", func() bool {
		resp, err := via(front, "GET", "web.test", "/", nil, "Accept", "text/html")
		if err != nil {
			return false
		}
		return strings.Contains(readAll(t, resp), `"name":"web"`) && resp.StatusCode == 200
	})

	// An API call: held, then answered by the app.
	start = time.Now()
	resp, err = via(front, "GET", "held.test", "/", nil, "Accept", "application/json")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"name":"held"`) || time.Since(start) < time.Second {
		t.Errorf("held: %d %s after %s", resp.StatusCode, body, time.Since(start))
	}

	// 20 at once: one start, one process answers them all.
	seen := crowd(t, 20, func(int) (int, error) {
		resp, err := via(front, "GET", "crowd.test", "/", nil, "Accept", "application/json")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var ans appAnswer
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&ans) != nil {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return ans.PID, nil
	})
	if len(seen) != 1 || starts(p, "crowd") != 1 {
		t.Errorf("the crowd: answers from %v, %d starts; want one process, one start", seen, starts(p, "crowd"))
	}

	// Traffic through the proxy keeps an app up past its 3 s grace period;
	// once it stops, the app sleeps.
	until := time.Now().Add(6 * time.Second)
	for time.Now().Before(until) {
		resp, err := via(front, "GET", "busy.test", "/", nil, "Accept", "application/json")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		select {
		case <-time.After(300 * time.Millisecond): // the pace of the traffic, not a wait for a condition
		case <-t.Context().Done():
		}
	}
	if sleeps(p, "busy") != 0 {
		t.Error("the app was put to sleep while traffic came through the proxy")
	}
	testwait.For(t, 20*time.Second, "busy sleeps once the traffic stops", func() bool { return sleeps(p, "busy") == 1 })
}

// sleeps counts the times the app was put to sleep (Down, but for its first
// observation).
func sleeps(p *reaperProc, id string) int {
	n := 0
	for _, l := range p.logs() {
		if l["msg"] == "app status changed" && l["app"] == id && l["to"] == "Down" && l["from"] != "WaitingForInit" {
			n++
		}
	}
	return n
}

func TestForwardAuth_ThroughNginx(t *testing.T) {
	testThrough(t, nginxFront)
}

func TestForwardAuth_ThroughCaddy(t *testing.T) {
	testThrough(t, caddyFront)
}

// testThrough runs the proxy suite through the proxy front starts.
func testThrough(t *testing.T, front func(t *testing.T, auth string, apps ...app) string) {
	web, api, held, crowdApp, busy := proxiedApps(t)
	auth := freeport.Addr(t)
	cfg := strings.Replace(shortGrace(reaperConfig(web, api, held, crowdApp, busy)), "  data_dir:", "  auth_listen: "+auth+"\n  data_dir:", 1)
	p := startReaper(t, t.TempDir(), cfg)
	testwait.For(t, 10*time.Second, "every app Down", func() bool { return downs(p) >= 5 })
	proxySuite(t, p, front(t, auth, web, api, held, crowdApp, busy))
}

func TestForwardAuth_ThroughNginx_UntrustedProxyGets403(t *testing.T) {
	testUntrusted(t, nginxFront)
}

func TestForwardAuth_ThroughCaddy_UntrustedProxyGets403(t *testing.T) {
	testUntrusted(t, caddyFront)
}

func testUntrusted(t *testing.T, start func(t *testing.T, auth string, apps ...app) string) {
	a := app{id: "web", addr: freeport.Addr(t)}
	p, auth := startAuthReaper(t, "  auth_trusted_proxies: [10.0.0.0/8]\n", a)
	front := start(t, auth, a)
	resp, err := via(front, "GET", "web.test", "/", nil, "Accept", "text/html")
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, resp); resp.StatusCode != 403 {
		t.Errorf("through nginx, from outside auth_trusted_proxies: %d", resp.StatusCode)
	}
	if starts(p, "web") != 0 {
		t.Error("an untrusted proxy woke the app")
	}
}

func downs(p *reaperProc) int {
	n := 0
	for _, l := range p.logs() {
		if l["msg"] == "app status changed" && l["to"] == "Down" {
			n++
		}
	}
	return n
}

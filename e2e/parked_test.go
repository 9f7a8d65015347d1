package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// Held requests wait parked in the real binary: hundreds of clients wait for an
// app whose boot the test controls, half of them give up, and when the app is up
// exactly the others are answered by it, each on its own connection, which stays
// open for the client's next request. Nothing of the clients that left reaches the
// app.
func TestReaper_ParkedClientsThatLeaveNeverReachTheApp(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	gate := filepath.Join(dir, "boot")
	addr := freeport.Addr(t)
	p := startReaper(t, dir, gatedConfig(gate, addr))
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "app status changed" && l["to"] == "Down" }, 10*time.Second)

	held := func() int { return heldOn(t, p) }
	waitHeld := func(want int) { t.Helper(); waitHeldOn(t, p, want) }

	conns := sendToWeb(t, p, n)
	waitHeld(n)
	for i := 0; i < n; i += 2 {
		conns[i].Close() // half the clients give up
	}
	waitHeld(n / 2)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	for i := 1; i < n; i += 2 {
		conns[i].SetDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(conns[i])
		for round, path := range []string{fmt.Sprintf("/r/%d", i), fmt.Sprintf("/again/%d", i)} {
			if round == 1 { // the connection serves the client's next request
				fmt.Fprintf(conns[i], "GET %s HTTP/1.1\r\nHost: web.test\r\nAccept: application/json\r\n\r\n", path)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("client %d, %s: %v", i, path, err)
			}
			var ans struct {
				Path string `json:"path"`
			}
			body := readAll(t, resp)
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &ans) != nil || ans.Path != path {
				t.Fatalf("client %d, %s: %d %s", i, path, resp.StatusCode, body)
			}
		}
	}
	if got := starts(p, "web"); got != 1 {
		t.Errorf("starts = %d, want 1", got)
	}
	// The access log: the clients that left got nothing from the app. Lines are
	// written in batches: wait for all n.
	var lines []map[string]any
	if !testwait.Until(10*time.Second, func() bool {
		lines = lines[:0]
		for _, l := range p.logs() {
			if id, _ := l["request_id"].(string); l["msg"] == "access" && strings.HasPrefix(id, "parked-") {
				lines = append(lines, l)
			}
		}
		return len(lines) >= n
	}) {
		t.Fatalf("%d access lines of the first requests, want %d", len(lines), n)
	}
	left, answered := 0, 0
	for _, l := range lines {
		var i int
		fmt.Sscanf(l["request_id"].(string), "parked-%d", &i)
		switch status := l["status"].(float64); {
		case i%2 == 0 && status == 499 && l["upstream"] == "gateway": // never reached the app
			left++
		case i%2 == 1 && status == 200 && l["upstream"] == "http://"+addr:
			answered++
		default:
			t.Errorf("access line of client %d: %v", i, l)
		}
	}
	if left != n/2 || answered != n/2 {
		t.Errorf("access lines: %d left, %d answered; want %d each", left, answered, n/2)
	}
	if got := held(); got != 0 {
		t.Errorf("held = %d at the end", got)
	}
}

// parkedAdminToken is the admin token of gatedConfig.
const parkedAdminToken = "e2e-parked-admin-token"

// gatedConfig is a reaper with one app, web, whose process waits for the file
// gate before it boots, behind a hold route with no ready delay.
func gatedConfig(gate, addr string) string {
	return fmt.Sprintf(`
node:
  id: e2e
  listen: 127.0.0.1:0
  admin_listen: 127.0.0.1:0
  admin_token: %s
  data_dir: %%DIR%%/data
  shutdown_timeout: 5s
  max_wakes_per_client: 0 # the tests wake apps again and again from 127.0.0.1
reaper:
  job_interval: 1s
  fast_interval: 200ms
paas:
  driver: process
  apps:
    - id: web
      # The app boots once the test creates the gate file.
      command: [sh, -c, 'while [ ! -e %s ]; do sleep 0.02; done; exec "$0" --listen %s --name web', "%%DEMOAPP%%"]
      ready: {tcp: %q}
      stop_timeout: 3s
routes:
  - id: web
    frontend: {domains: [web.test]}
    backend: {targets: ["http://%s"]}
    plugins:
      - plugin: reaper
        config: {app_id: web, grace_period: 60s, fail_timeout: 60s, ready_delay: 0}
`, parkedAdminToken, gate, addr, addr, addr)
}

// heldOn is the admin API's count of requests held for web on p.
func heldOn(t *testing.T, p *reaperProc) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+p.admin+"/api/apps/web", nil)
	req.Header.Set("Authorization", "Bearer "+parkedAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Held int `json:"held"`
	}
	if err := json.Unmarshal([]byte(readAll(t, resp)), &v); err != nil {
		t.Fatal(err)
	}
	return v.Held
}

// waitHeldOn polls the admin API until want requests are held.
func waitHeldOn(t *testing.T, p *reaperProc, want int) {
	t.Helper()
	var got int
	if !testwait.Until(20*time.Second, func() bool { got = heldOn(t, p); return got == want }) {
		t.Fatalf("held = %d, want %d", got, want)
	}
}

// On SIGTERM, every parked request gets its answer (503, retry) before reaper
// exits: none is dropped with the listener.
func TestReaper_ParkedRequestsAreAnsweredOnSIGTERM(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	p := startReaper(t, dir, gatedConfig(filepath.Join(dir, "never"), freeport.Addr(t)))
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "app status changed" && l["to"] == "Down" }, 10*time.Second)
	conns := sendToWeb(t, p, n)
	waitHeldOn(t, p, n)
	p.signal(syscall.SIGTERM)
	for i, c := range conns {
		c.SetDeadline(time.Now().Add(15 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "the gateway is restarting") {
			t.Errorf("client %d: %d %v %s", i, resp.StatusCode, resp.Header, body)
		}
	}
	if code := p.wait(15 * time.Second); code != 0 {
		t.Errorf("reaper exited with %d", code)
	}
}

// sendToWeb opens n connections to the gateway and writes on connection i a GET
// of /r/i for web.test, with the request id parked-i. The connections close with
// the test.
func sendToWeb(t *testing.T, p *reaperProc, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", p.gateway)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /r/%d HTTP/1.1\r\nHost: web.test\r\nAccept: application/json\r\nX-Request-Id: parked-%d\r\n\r\n", i, i)
		conns[i] = c
	}
	return conns
}

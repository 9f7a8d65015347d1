package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// The abuse suite (issue 10, item 10): each subtest starts its own reaper binary,
// attacks it with one kind of hostile traffic, checks that every answer is the
// documented one, and measures the process before, during and after the attack:
// resident memory (VmRSS; the peak is VmHWM, reset before the attack), threads and
// open files from /proc, goroutines from its /metrics (go_goroutines), and the
// client connections it still holds. A leak of one goroutine or one connection
// per attacking connection shows in the client connections, open files and
// goroutines left, which are bounded far below the attack's size. The table of
// figures is printed at the end (go test -v -run Abuse ./e2e/);
// docs/reliability.md lists the attacks and what they check.
func TestAbuse(t *testing.T) {
	table := &abuseTable{}
	t.Cleanup(func() { table.print(t) })
	t.Run("slowloris_headers", func(t *testing.T) { abuseSlowlorisHeaders(t, table) })
	t.Run("slowloris_bodies", func(t *testing.T) { abuseSlowlorisBodies(t, table) })
	t.Run("held_bodies_in_memory", func(t *testing.T) { abuseHeldBodies(t, table) })
	t.Run("held_clients_leave", func(t *testing.T) { abuseHeldClientsLeave(t, table) })
	t.Run("flood_beyond_max_held", func(t *testing.T) { abuseFlood(t, table) })
	t.Run("oversized_headers", func(t *testing.T) { abuseOversizedHeaders(t, table) })
	t.Run("malformed_reaper_header", func(t *testing.T) { abuseReaperHeader(t, table) })
	t.Run("host_variants", func(t *testing.T) { abuseHosts(t, table) })
	t.Run("h2_rapid_reset", func(t *testing.T) { abuseRapidReset(t, table) })
}

// abuseToken is the admin token of the reapers startAbuse starts.
const abuseToken = "e2e-abuse-admin-token"

// abuseEnv is one reaper under attack, and the backend of its plain route.
type abuseEnv struct {
	p *reaperProc
	// hello counts the requests of the plain route's backend in flight, and
	// those it finished.
	helloIn, helloDone atomic.Int64
	echoAddr           string // the echo app's address (a demo app that boots at once)
}

// startAbuse starts a reaper with these routes:
//
//   - hello.localhost: a plain route (no reaper plugin) to a backend of the test
//     that reads the whole body and answers "hello";
//   - flood.test, slowheld.test, bigbody.test, quiet.test, noisy.test: apps that
//     never open their port (a wake never ends), with the hold behaviour (flood:
//     max_held 100; slowheld and bigbody: fail_timeout 3s) or unavailable (quiet,
//     noisy);
//   - echo.test: the demo app, which boots at once, with the hold behaviour.
//
// The node reads headers for 2 s at most, waits 1 s at most for the next bytes of
// a body, and tls serves HTTPS with HTTP/2. It
// waits until every app that never boots has been seen Down.
func startAbuse(t *testing.T, tls string) *abuseEnv {
	t.Helper()
	e := &abuseEnv{echoAddr: freeport.Addr(t)}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.helloIn.Add(1)
		defer e.helloDone.Add(1)
		defer e.helloIn.Add(-1)
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		io.WriteString(w, "hello")
	}))
	t.Cleanup(backend.Close)
	never := []string{"flood", "slowheld", "bigbody", "quiet", "noisy"}
	var b strings.Builder
	fmt.Fprintf(&b, `
node:
  id: e2e
  listen: 127.0.0.1:0
  admin_listen: 127.0.0.1:0
  admin_token: %s
  data_dir: %%DIR%%/data
  shutdown_timeout: 5s
  read_header_timeout: 2s
  body_idle_timeout: 1s
%sreaper:
  job_interval: 1s
  fast_interval: 200ms
paas:
  driver: process
  apps:
`, abuseToken, tls)
	addrs := map[string]string{"echo": e.echoAddr}
	for _, id := range never {
		// sleep never listens on its ready address: a wake never ends.
		addrs[id] = freeport.Addr(t)
		fmt.Fprintf(&b, "    - {id: %s, command: [sleep, \"600\"], ready: {tcp: %q}, stop_timeout: 1s}\n", id, addrs[id])
	}
	fmt.Fprintf(&b, "    - {id: echo, command: [%q, --listen, %q, --name, echo], ready: {tcp: %q}, stop_timeout: 3s}\n",
		"%DEMOAPP%", e.echoAddr, e.echoAddr)
	b.WriteString("routes:\n")
	fmt.Fprintf(&b, "  - {id: hello, frontend: {domains: [hello.localhost]}, backend: {targets: [%q]}}\n", backend.URL)
	plugins := map[string]string{
		"flood":    "fail_timeout: 60s, max_held: 100",
		"slowheld": "fail_timeout: 3s",
		"bigbody":  "fail_timeout: 3s",
		"quiet":    "fail_timeout: 60s, api_behavior: unavailable",
		"noisy":    "fail_timeout: 60s, api_behavior: unavailable",
		"echo":     "fail_timeout: 20s",
	}
	for _, id := range append(never, "echo") {
		fmt.Fprintf(&b, "  - id: %s\n    frontend: {domains: [%s.test]}\n    backend: {targets: [\"http://%s\"]}\n", id, id, addrs[id])
		fmt.Fprintf(&b, "    plugins: [{plugin: reaper, config: {app_id: %s, grace_period: 60s, %s}}]\n", id, plugins[id])
	}
	e.p = startReaper(t, t.TempDir(), b.String())
	for _, id := range never {
		e.p.waitLog(func(l map[string]any) bool {
			return l["msg"] == "app status changed" && l["app"] == id && l["to"] == "Down"
		}, 15*time.Second)
	}
	return e
}

// held is the admin API's count of requests held for app.
func (e *abuseEnv) held(t *testing.T, app string) int {
	t.Helper()
	v := e.admin(t, app)
	return int(v["held"].(float64))
}

// admin is the admin API's view of app.
func (e *abuseEnv) admin(t *testing.T, app string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+e.p.admin+"/api/apps/"+app, nil)
	req.Header.Set("Authorization", "Bearer "+abuseToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(readAll(t, resp)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitHeld polls the admin API until want requests are held for app.
func (e *abuseEnv) waitHeld(t *testing.T, app string, want int) {
	t.Helper()
	var got int
	if !testwait.Until(15*time.Second, func() bool { got = e.held(t, app); return got == want }) {
		t.Fatalf("%s: %d held, want %d", app, got, want)
	}
}

// hello sends a normal request on the plain route and checks its answer.
func (e *abuseEnv) hello(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.p.url("/"), nil)
	req.Host = "hello.localhost"
	req.Close = true // no connection left open after the attack but the attackers'
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a normal request: %v", err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || body != "hello" {
		t.Fatalf("a normal request: %d %q", resp.StatusCode, body)
	}
}

// dialRaw opens a TCP connection to the gateway, closed with the test.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawResponse reads one response from c, with its body, within limit.
func rawResponse(c net.Conn, br *bufio.Reader, limit time.Duration) (*http.Response, string, error) {
	c.SetReadDeadline(time.Now().Add(limit))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// closedAfter reads c until the server closes it, within limit: it returns what
// was read and whether the connection ended (EOF or reset) rather than timed out.
func closedAfter(c net.Conn, br io.Reader, limit time.Duration) (string, bool) {
	c.SetReadDeadline(time.Now().Add(limit))
	b, err := io.ReadAll(br)
	var ne net.Error
	return string(b), !(errors.As(err, &ne) && ne.Timeout())
}

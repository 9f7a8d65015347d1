package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// gatewayConfig routes host to backend, with no reaper plugin.
func gatewayConfig(routes string) string {
	return `
node:
  id: e2e
  listen: 127.0.0.1:0
  admin_listen: 127.0.0.1:0
  admin_token: e2e-admin-token-123
  data_dir: %DIR%/data
  shutdown_timeout: 20s
  max_wakes_per_client: 0 # the tests wake apps again and again from 127.0.0.1
routes:
` + routes
}

func route(id, host, backend string) string {
	return fmt.Sprintf("  - id: %s\n    frontend: {domains: [%s]}\n    backend: {targets: [%q]}\n", id, host, backend)
}

func TestServe_GracefulDrainOnSIGTERM(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "finished")
	}))
	defer backend.Close()
	p := startReaper(t, t.TempDir(), gatewayConfig(route("slow", "slow.test", backend.URL)))

	type res struct {
		status int
		body   string
		err    error
	}
	got := make(chan res, 1)
	go func() {
		resp, err := p.request("GET", "slow.test", "/", nil)
		if err != nil {
			got <- res{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- res{status: resp.StatusCode, body: string(b)}
	}()
	<-arrived
	p.signal(syscall.SIGTERM)
	p.waitLog(func(l map[string]any) bool { return strings.HasPrefix(fmt.Sprint(l["msg"]), "shutting down") }, 5*time.Second)
	// No new connection is accepted while the request drains.
	testwait.For(t, 5*time.Second, "the listener closes", func() bool {
		c, err := net.Dial("tcp", p.gateway)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	r := <-got
	if r.err != nil || r.status != 200 || r.body != "finished" {
		t.Fatalf("in-flight request: %d %q %v", r.status, r.body, r.err)
	}
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

func TestServe_ReloadOnSIGHUP(t *testing.T) {
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "A") }))
	defer a.Close()
	hold := make(chan struct{})
	arrived := make(chan struct{}, 1)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-hold
		}
		io.WriteString(w, "B")
	}))
	defer b.Close()
	dir := t.TempDir()
	p := startReaper(t, dir, gatewayConfig(route("a", "a.test", a.URL)+route("b", "b.test", b.URL)))
	var send func(client *http.Client, host, path string) (int, string)

	// A request in flight across the reload, on a connection opened before it.
	heldClient := &http.Client{Transport: &http.Transport{}}
	client := &http.Client{Transport: &http.Transport{}}
	do := func(host, path string) (int, string) {
		return send(client, host, path)
	}
	send = func(client *http.Client, host, path string) (int, string) {
		req, _ := http.NewRequest("GET", p.url(path), nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := do("b.test", "/"); code != 200 || body != "B" {
		t.Fatalf("before reload: %d %q", code, body)
	}
	held := make(chan string, 1)
	go func() { _, body := send(heldClient, "b.test", "/hold"); held <- body }()
	<-arrived

	// A good file: route a goes, route c comes.
	writeConfig(t, dir, gatewayConfig(route("b", "b.test", b.URL)+route("c", "c.test", a.URL)))
	p.signal(syscall.SIGHUP)
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "configuration reloaded" }, 10*time.Second)
	if code, _ := do("a.test", "/"); code != 404 {
		t.Errorf("removed route: %d, want 404", code)
	}
	if code, body := do("c.test", "/"); code != 200 || body != "A" {
		t.Errorf("new route: %d %q", code, body)
	}
	close(hold)
	if body := <-held; body != "B" {
		t.Errorf("request in flight across the reload got %q", body)
	}

	// A bad file: every problem logged, the running routes stay.
	writeConfig(t, dir, gatewayConfig(`  - id: b
    frontend: {domains: [b.test]}
    backend: {targets: ["htp://x"]}
  - id: d
    frontend: {domainz: [d.test]}
`))
	p.signal(syscall.SIGHUP)
	p.waitLog(func(l map[string]any) bool {
		return l["msg"] == "the configuration was not reloaded: the running one stays"
	}, 10*time.Second)
	logs := p.logText()
	for _, want := range []string{
		`"at":"routes[0].backend.targets[0]","problem":"\"htp://x\" is not an http(s) URL"`,
		`"at":"routes[1].frontend.domainz","problem":"unknown key (did you mean \"domains\"?)"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if code, body := do("c.test", "/"); code != 200 || body != "A" {
		t.Errorf("after a bad reload: %d %q, want the running routes", code, body)
	}
}

// pattern is an endless reader of a repeating pattern, for bodies that are never
// held in memory whole.
type pattern struct{ n, limit int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.n >= p.limit {
		return 0, io.EOF
	}
	if rest := p.limit - p.n; int64(len(b)) > rest {
		b = b[:rest]
	}
	for i := range b {
		b[i] = byte((p.n + int64(i)) % 251)
	}
	p.n += int64(len(b))
	return len(b), nil
}

func TestServe_StreamsBodiesWithBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 GiB through the gateway")
	}
	app := freeport.Addr(t)
	cmd := exec.Command(bins.demoapp, "--listen", app, "--name", "stream")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	testwait.For(t, 10*time.Second, "demoapp listens", func() bool {
		c, err := net.Dial("tcp", app)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	p := startReaper(t, t.TempDir(), gatewayConfig(route("s", "s.test", "http://"+app)))
	const size = 1 << 30

	// Upload 1 GiB, chunked (unknown length).
	src := &pattern{limit: size}
	h := sha256.New()
	resp, err := p.request("POST", "s.test", "/upload", io.TeeReader(struct{ io.Reader }{src}, h))
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	if err := json.Unmarshal([]byte(readAll(t, resp)), &up); err != nil {
		t.Fatal(err)
	}
	if up.Bytes != size || up.SHA256 != hex.EncodeToString(h.Sum(nil)) {
		t.Fatalf("upload arrived as %d bytes %s", up.Bytes, up.SHA256)
	}

	// Download 1 GiB.
	resp, err = p.request("GET", "s.test", fmt.Sprintf("/download?bytes=%d", size), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != size {
		t.Fatalf("download: %d bytes, %v", n, err)
	}
	peak := vmHWM(t, p.cmd.Process.Pid)
	t.Logf("gateway peak RSS after 1 GiB up and 1 GiB down: %.1f MiB", float64(peak)/(1<<20))
	if peak > 64<<20 {
		t.Errorf("gateway peak RSS %.1f MiB, want under 64 MiB", float64(peak)/(1<<20))
	}
}

func TestServe_AdminListener(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	p := startReaper(t, t.TempDir(), gatewayConfig(route("a", "a.test", backend.URL)))
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+p.admin+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readAll(t, resp)
	}
	if code, body := get("/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := get("/readyz", ""); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
	if code, body := get("/api/apps", ""); code != 401 || !strings.Contains(body, "admin token is required") {
		t.Errorf("no token: %d %q", code, body)
	}
	if code, _ := get("/api/apps", "wrong"); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	if strings.Contains(p.logText(), "e2e-admin-token-123") {
		t.Errorf("the admin token appears in the logs")
	}

	// Without a token, health only, and the log says why.
	p2 := startReaper(t, t.TempDir(), strings.Replace(gatewayConfig(route("a", "a.test", backend.URL)), "  admin_token: e2e-admin-token-123\n", "", 1))
	req, _ := http.NewRequest("GET", "http://"+p2.admin+"/api/apps", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 404 || !strings.Contains(body, "node.admin_token is not set") {
		t.Errorf("admin API without a token: %d %q", resp.StatusCode, body)
	}
	if !strings.Contains(p2.logText(), "node.admin_token is not set") {
		t.Errorf("no log line says why the admin API is off")
	}
}

func TestCheck_ReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, `
node:
  listen: "nope"
paas:
  driver: process
  apps:
    - id: web
      command: []
      ready: {}
routes:
  - id: web
    frontend: {domains: ["web.test"]}
    backend: {targets: ["htp://x"]}
    plugins:
      - plugin: reaper
        config: {app_id: nope, api_behavior: sometimes, monitoring_filters: [{source: path, regex: "("}]}
`)
	out, err := exec.Command(bins.reaper, "check", "--config", path).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit code %d, want 1; output:\n%s", code, out)
	}
	want := path + `: 7 problems:
  node.listen: "nope" is not an address (write host:port, such as 127.0.0.1:8080 or :8080)
  paas.apps[0].command: is required (the program and its arguments, as a list)
  paas.apps[0].ready: give exactly one of tcp, http, postgres or redis
  routes[0].backend.targets[0]: "htp://x" is not an http(s) URL
  routes[0].plugins[0].config.api_behavior: "sometimes" is not a behaviour (use hold or unavailable)
  routes[0].plugins[0].config.monitoring_filters[0].regex: "(" is not a valid regular expression: missing closing ) ` + "`(`" + `
  routes[0].plugins[0].config.app_id: "nope" is not an app of paas.apps
`
	if string(out) != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	good := writeConfig(t, t.TempDir(), gatewayConfig(route("a", "a.test", "http://127.0.0.1:1")))
	out, err = exec.Command(bins.reaper, "check", "--config", good).CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), ": ok (1 route, driver process, store memory)\n") {
		t.Errorf("good file: %v %s", err, out)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func TestCLI_HelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"serve", "--help"}, {"check", "--help"}, {"version", "--help"}} {
		out, err := exec.Command(bins.reaper, args...).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "Usage: reaper "+args[0]) {
			t.Errorf("%v: %v %s", args, err, out)
		}
	}
	out, err := exec.Command(bins.reaper, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "reaper ") {
		t.Errorf("version: %v %s", err, out)
	}
	if _, err := exec.Command(bins.reaper, "frobnicate").CombinedOutput(); exitCode(err) != 2 {
		t.Errorf("unknown command: exit %d, want 2", exitCode(err))
	}
}

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// These tests run the real reaper binary with the Clever Cloud driver against the
// fake Clever Cloud, run in-process so that the tests can count its calls, act as
// the console and inject faults. Routes send traffic to each fake app's own edge
// listener, which answers as the app's domain does: the app's 200 while it runs,
// the platform's 404 + X-CleverCloudUpgrade while it has no instance.

const ccAdminToken = "e2e-admin-token-123"

// ccApp is one fake Clever Cloud app behind a route named <name>.test.
type ccApp struct {
	name  string
	state string // the fake's initial state: SHOULD_BE_UP (default) or SHOULD_BE_DOWN
	// The reaper plugin's keys; empty takes 60s, 20s and 0.2 (seconds).
	grace, failTimeout, readyDelay string
	plugin                         string // extra plugin keys, as YAML flow items
	// byVHost: the app has <name>.test among its vhosts, and the route names no
	// app: reaper finds it by the route's domain.
	byVHost bool
}

// ccEnv is a fake Clever Cloud and a reaper driving it.
type ccEnv struct {
	t     *testing.T
	fake  *fakeclever.Fake
	token string
	ids   map[string]string // route name → app id
	apps  []ccApp
	p     *reaperProc
}

// fastClever are the fake's timings of these tests: short, but with every phase
// (SHOULD_BE_DOWN before the deployment, WANTS_TO_BE_UP while it boots,
// SHOULD_BE_UP lingering after a stop) long enough for reaper's fast tick to see.
func fastClever() fakeclever.Options {
	return fakeclever.Options{BootTime: 700 * time.Millisecond, DeployDelay: 300 * time.Millisecond,
		StopLinger: 300 * time.Millisecond}
}

// randomToken is an API token no other part of the test could print by chance.
func randomToken(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newClever starts a fake Clever Cloud with the apps, each with an edge listener of
// its own, and reaper on a configuration pointed at it. opts.Token is replaced by a
// fresh random token.
func newClever(t *testing.T, opts fakeclever.Options, apps ...ccApp) *ccEnv {
	t.Helper()
	e := startFake(t, opts, apps...)
	e.startReaper(e.token)
	return e
}

// startFake starts the fake and adds the apps, without reaper.
func startFake(t *testing.T, opts fakeclever.Options, apps ...ccApp) *ccEnv {
	t.Helper()
	opts.Token = randomToken("cc-e2e-token-")
	f := fakeclever.New(opts)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	e := &ccEnv{t: t, fake: f, token: opts.Token, ids: map[string]string{}, apps: apps}
	for _, a := range apps {
		state := a.state
		if state == "" {
			state = fakeclever.StateShouldBeUp
		}
		app := fakeclever.App{Name: a.name, State: state, EdgeAddr: "127.0.0.1:0"}
		if a.byVHost {
			app.VHosts = []string{a.name + ".test"}
		}
		added := f.AddApp(app)
		e.ids[a.name] = added.ID
	}
	return e
}

// reaperConfig is reaper's configuration for the fake and its apps, with the
// given API token.
func (e *ccEnv) reaperConfig(token string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
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
  driver: clevercloud
  clevercloud:
    api_url: %q
    token: %q
    owner_id: %s
    timeout: 5s
routes:
`, ccAdminToken, e.fake.BridgeURL(), token, fakeclever.DefaultOrganisation)
	for _, a := range e.apps {
		def := func(v, d string) string {
			if v == "" {
				return d
			}
			return v
		}
		extra := ""
		if a.plugin != "" {
			extra = ", " + a.plugin
		}
		app := fmt.Sprintf("app_id: %s, owner_id: %s, ", e.ids[a.name], fakeclever.DefaultOrganisation)
		if a.byVHost {
			app = ""
		}
		fmt.Fprintf(&b, "  - id: %s\n    frontend: {domains: [%s.test]}\n    backend: {targets: [%q]}\n"+
			"    plugins:\n      - plugin: reaper\n        config: {%sgrace_period: %s, fail_timeout: %s, ready_delay: %s%s}\n",
			a.name, a.name, e.fake.AppEdgeURL(e.ids[a.name]), app,
			def(a.grace, "60s"), def(a.failTimeout, "20s"), def(a.readyDelay, "0.2"), extra)
	}
	return b.String()
}

// startReaper runs reaper with the given API token. At the end of the test, the
// whole log (debug level included) must not hold the token. When the test failed
// and E2E_CLEVER_LOGS names a directory, the log is written there.
func (e *ccEnv) startReaper(token string) *reaperProc {
	e.t.Helper()
	p := startReaper(e.t, e.t.TempDir(), e.reaperConfig(token))
	e.t.Cleanup(func() {
		p.kill()
		if strings.Contains(p.logText(), token) {
			e.t.Errorf("the API token appears in reaper's log")
		}
		if dir := os.Getenv("E2E_CLEVER_LOGS"); dir != "" && e.t.Failed() {
			os.WriteFile(dir+"/"+strings.ReplaceAll(e.t.Name(), "/", "_")+".log", []byte(p.logText()), 0o644)
		}
	})
	e.p = p
	return p
}

// waitStatus waits until reaper logs the app's move to status, and returns the line.
func (e *ccEnv) waitStatus(name, status string, limit time.Duration) map[string]any {
	e.t.Helper()
	id := e.ids[name]
	return e.p.waitLog(func(l map[string]any) bool {
		return l["msg"] == "app status changed" && l["app"] == id && l["to"] == status
	}, limit)
}

// adminApp is GET /api/apps/{id} on the admin API.
func (e *ccEnv) adminApp(name string) map[string]any {
	e.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+e.p.admin+"/api/apps/"+e.ids[name], nil)
	req.Header.Set("Authorization", "Bearer "+ccAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	body := readAll(e.t, resp)
	if resp.StatusCode != 200 {
		e.t.Fatalf("admin API: %d %s", resp.StatusCode, body)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		e.t.Fatalf("admin API: %q: %v", body, err)
	}
	return v
}

// reaperStatus is the status reaper gives through the status header.
func (e *ccEnv) reaperStatus(name string) string {
	e.t.Helper()
	resp, err := e.p.request("GET", name+".test", "/", nil, "CleverCloud-Reaper", "status")
	if err != nil {
		e.t.Fatal(err)
	}
	var st struct {
		Status string `json:"status"`
	}
	if body := readAll(e.t, resp); resp.StatusCode != 200 || json.Unmarshal([]byte(body), &st) != nil {
		e.t.Fatalf("status request: %d %s", resp.StatusCode, body)
	}
	return st.Status
}

// calls counts the API calls the fake answered for the app with that method on a
// path ending with suffix.
func (e *ccEnv) calls(name, method, suffix string) int {
	n := 0
	for _, c := range e.fake.Calls() {
		if c.App == e.ids[name] && c.Method == method && strings.HasSuffix(c.Path, suffix) {
			n++
		}
	}
	return n
}

// observations counts the calls that read the app's state so far (a GET
// /v2/summary for a pass over several apps, a GET of the app for one): at least one
// per job pass that looks at it.
func (e *ccEnv) observations(name string) int {
	n := 0
	for _, c := range e.fake.Calls() {
		if c.Method == "GET" && (c.Path == "/v2/summary" || strings.HasSuffix(c.Path, "/applications/"+e.ids[name])) {
			n++
		}
	}
	return n
}

// fakeAnswer is what the fake's edge answers for an app that runs.
type fakeAnswer struct {
	AppID string `json:"app_id"`
}

// getJSON sends an API request (not a browser's) for the app and returns the status,
// the app id of the answer when it is the app's 200, the headers and the body.
func (e *ccEnv) getJSON(client *http.Client, name string) (int, string, http.Header, string, error) {
	req, _ := http.NewRequest("GET", e.p.url("/"), nil)
	req.Host = name + ".test"
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, "", err
	}
	var ans fakeAnswer
	if resp.StatusCode == 200 {
		_ = json.Unmarshal(b, &ans)
	}
	return resp.StatusCode, ans.AppID, resp.Header, string(b), nil
}

// logTime is the time a JSON log line was written.
func logTime(t *testing.T, l map[string]any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"]))
	if err != nil {
		t.Fatalf("log line without a time: %v", l)
	}
	return at
}

func TestClever_IdleAppSleepsAfterItsGracePeriod(t *testing.T) {
	const grace = 3 * time.Second
	e := newClever(t, fastClever(), ccApp{name: "web", grace: "3s"})
	id := e.ids["web"]
	e.waitStatus("web", "Up", 10*time.Second)

	used := time.Now() // before the request: reaper counts from its end, later
	code, got, _, body, err := e.getJSON(http.DefaultClient, "web")
	if err != nil || code != 200 || got != id {
		t.Fatalf("the app is up: %d %s %v", code, body, err)
	}
	sleep := e.p.waitLog(func(l map[string]any) bool { return l["msg"] == "app put to sleep" && l["app"] == id }, 15*time.Second)
	if slept := logTime(t, sleep).Sub(used); slept < grace {
		t.Errorf("put to sleep %v after its last request, before its grace period (%v)", slept, grace)
	}
	e.waitStatus("web", "Down", 10*time.Second)
	if st, _ := e.fake.App(id); st.State != fakeclever.StateShouldBeDown {
		t.Errorf("the platform says %s, want SHOULD_BE_DOWN", st.State)
	}
	// Two more full passes: a sleeping app is not stopped again.
	after := e.observations("web")
	testwait.For(t, 10*time.Second, "two more job passes", func() bool { return e.observations("web") >= after+2 })
	if n := e.calls("web", "DELETE", "/instances"); n != 1 {
		t.Errorf("DELETE …/instances sent %d times, want exactly 1", n)
	}
	if n := e.fake.Starts(id); n != 0 {
		t.Errorf("%d starts, want none", n)
	}
	if st := e.reaperStatus("web"); st != "Down" {
		t.Errorf("reaper says %s, want Down", st)
	}
}

// A route that names no app, whose target is not the app's default domain,
// serves the app that has the route's domain among its vhosts: reaper finds it
// at start and wakes it for a request.
func TestClever_RouteFindsItsAppByVHost(t *testing.T) {
	e := newClever(t, fastClever(), ccApp{name: "custom", state: fakeclever.StateShouldBeDown, byVHost: true})
	id := e.ids["custom"]
	e.p.waitLog(func(l map[string]any) bool {
		return l["msg"] == "reaper: the route's app was found by its domains" && l["app"] == id
	}, 10*time.Second)
	e.waitStatus("custom", "Down", 10*time.Second)
	code, got, _, body, err := e.getJSON(http.DefaultClient, "custom")
	if err != nil || code != 200 || got != id {
		t.Fatalf("a held request for the app found by its vhost: %d %q %s %v", code, got, body, err)
	}
	if n := e.fake.Starts(id); n != 1 {
		t.Errorf("%d starts of %s, want 1", n, id)
	}
}

func TestClever_WakeHoldUnavailableAndWaitingPage(t *testing.T) {
	down := fakeclever.StateShouldBeDown
	e := newClever(t, fastClever(),
		ccApp{name: "hold", state: down},
		ccApp{name: "unavail", state: down, plugin: "api_behavior: unavailable"},
		ccApp{name: "page", state: down})
	for _, n := range []string{"hold", "unavail", "page"} {
		e.waitStatus(n, "Down", 10*time.Second)
	}

	t.Run("hold", func(t *testing.T) {
		begin := time.Now()
		code, got, h, body, err := e.getJSON(http.DefaultClient, "hold")
		if err != nil || code != 200 || got != e.ids["hold"] || h.Get("CleverCloud-Reaper-Status") != "" {
			t.Fatalf("held request: %d %v %s %v, want the app's 200", code, h, body, err)
		}
		// Held through the deploy delay and the boot, not answered early.
		if held := time.Since(begin); held < 900*time.Millisecond {
			t.Errorf("answered after %v, before the app could have booted", held)
		}
		if n := e.fake.Starts(e.ids["hold"]); n != 1 {
			t.Errorf("starts = %d, want 1", n)
		}
	})

	t.Run("unavailable", func(t *testing.T) {
		begin := time.Now()
		resp, err := e.p.request("POST", "unavail.test", "/", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("CleverCloud-Reaper-Status") == "" || !strings.Contains(body, "the application is waking up") {
			t.Errorf("unavailable: %d %v %s", resp.StatusCode, resp.Header, body)
		}
		if d := time.Since(begin); d > time.Second {
			t.Errorf("answered after %v, want at once", d)
		}
		testwait.For(t, 15*time.Second, "the app answers once up", func() bool {
			code, got, h, _, err := e.getJSON(http.DefaultClient, "unavail")
			if err == nil && code == 404 && h.Get(fakeclever.UpgradeHeader) != "" {
				t.Fatalf("the platform's 404 reached the client")
			}
			return err == nil && code == 200 && got == e.ids["unavail"]
		})
		if n := e.fake.Starts(e.ids["unavail"]); n != 1 {
			t.Errorf("starts = %d, want 1", n)
		}
	})

	t.Run("waiting page", func(t *testing.T) {
		resp, err := e.p.request("GET", "page.test", "/", nil, "Accept", "text/html")
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != 503 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, "<html") || resp.Header.Get("CleverCloud-Reaper-Status") == "" {
			t.Errorf("browser: %d %v", resp.StatusCode, resp.Header)
		}
		polls := 0
		testwait.For(t, 15*time.Second, "a poll reaches the app", func() bool {
			polls++
			resp, err := e.p.request("HEAD", "page.test", "/", nil, "CleverCloud-Reaper", "poll", "Accept", "application/json")
			if err != nil {
				return false
			}
			resp.Body.Close()
			marker := resp.Header.Get("CleverCloud-Reaper-Status")
			switch {
			case resp.StatusCode == 404 && resp.Header.Get(fakeclever.UpgradeHeader) != "":
				t.Fatalf("a poll got the platform's 404")
			case resp.StatusCode == 503 && marker == "":
				t.Fatalf("a 503 poll without the marker header")
			}
			return resp.StatusCode == 200 && marker == ""
		})
		if polls < 2 {
			t.Errorf("the first poll reached the app: the app was not asleep")
		}
		if n := e.fake.Starts(e.ids["page"]); n != 1 {
			t.Errorf("starts = %d, want 1", n)
		}
	})
	for _, n := range []string{"hold", "unavail", "page"} {
		if r := e.fake.Restarts(e.ids[n]); r != 0 {
			t.Errorf("%s: %d restarts, want none", n, r)
		}
	}
}

func TestClever_FailedDeploymentGoesToErrorAndAnswers503(t *testing.T) {
	e := newClever(t, fastClever(), ccApp{name: "web", state: fakeclever.StateShouldBeDown})
	id := e.ids["web"]
	e.waitStatus("web", "Down", 10*time.Second)
	if err := e.fake.Console(id).FailNextDeployment(); err != nil {
		t.Fatal(err)
	}
	code, _, h, body, err := e.getJSON(http.DefaultClient, "web")
	if err != nil || code != 503 || h.Get("CleverCloud-Reaper-Status") != "Error" ||
		!strings.Contains(body, "the application could not be started") {
		t.Errorf("held request: %d %v %s %v", code, h, body, err)
	}
	if v := e.adminApp("web"); v["status"] != "Error" {
		t.Errorf("admin API: %v, want status Error", v)
	}
	if s := e.fake.Starts(id); s != 1 {
		t.Errorf("%d starts, want 1", s)
	}
}

func TestClever_AppStoppedFromTheConsoleIsSeenDownAndWokenByTheNextRequest(t *testing.T) {
	e := newClever(t, fastClever(), ccApp{name: "web"})
	id := e.ids["web"]
	if code, got, _, body, err := e.getJSON(http.DefaultClient, "web"); err != nil || code != 200 || got != id {
		t.Fatalf("the app is up: %d %s %v", code, body, err)
	}
	if err := e.fake.Console(id).Stop(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "reaper sees the app Down", func() bool { return e.reaperStatus("web") == "Down" })
	if n := e.calls("web", "DELETE", "/instances"); n != 0 {
		t.Errorf("reaper sent %d stops, want none", n)
	}
	if s := e.fake.Starts(id); s != 0 {
		t.Fatalf("%d starts before the request, want none", s)
	}
	code, got, h, body, err := e.getJSON(http.DefaultClient, "web")
	if err != nil || code != 200 || got != id || h.Get("CleverCloud-Reaper-Status") != "" {
		t.Errorf("the next request: %d %v %s %v, want the app's 200", code, h, body, err)
	}
	if s, r := e.fake.Starts(id), e.fake.Restarts(id); s != 1 || r != 0 {
		t.Errorf("%d starts and %d restarts, want 1 and 0", s, r)
	}
}

func TestClever_AppStartedFromOutsideSleepsAfterAFullGracePeriod(t *testing.T) {
	const grace = 3 * time.Second
	e := newClever(t, fastClever(), ccApp{name: "web", state: fakeclever.StateShouldBeDown, grace: "3s"})
	id := e.ids["web"]
	e.waitStatus("web", "Down", 10*time.Second)
	if err := e.fake.Console(id).Start(); err != nil {
		t.Fatal(err)
	}
	up := logTime(t, e.waitStatus("web", "Up", 10*time.Second))
	decided := logTime(t, e.waitStatus("web", "WaitingForShutdown", 15*time.Second))
	// The decision is made at a pass at least a grace period after the moment
	// reaper saw the app up (logged just after); passes are 1 s apart.
	if d := decided.Sub(up); d < grace-100*time.Millisecond || d > grace+2*time.Second {
		t.Errorf("put to sleep %v after it was seen up, want a grace period (%v) plus at most a pass", d, grace)
	}
	e.p.waitLog(func(l map[string]any) bool { return l["msg"] == "app put to sleep" && l["app"] == id }, 10*time.Second)
	if s := e.fake.Starts(id); s != 0 {
		t.Errorf("reaper started the app %d times, want none (it was started from outside)", s)
	}
	if n := e.calls("web", "DELETE", "/instances"); n != 1 {
		t.Errorf("%d stops, want 1", n)
	}
}

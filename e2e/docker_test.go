package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// These tests run the real binary with the docker driver against the machine's
// Docker engine, through dockertest's allow-list proxy (a call outside the
// driver's least privilege fails them). The apps are containers of the demo app,
// built FROM scratch from local files, their port published on loopback. They skip
// when no engine answers; REAPER_REQUIRE_DOCKER=1 (CI) makes that a failure.

const dockerAdminToken = "docker-e2e-admin-token"

// dockerApp is one container behind a route <id>.test.
type dockerApp struct {
	id, container, addr string
	stopMethod          string // stop (default), pause, kill
	grace               string // the route's grace period; empty: 60s
	failTimeout         string // the route's fail timeout; empty: 15s
	plugin              string // extra reaper plugin keys, as YAML flow items
	// ready is the app's ready key as a YAML flow mapping ({tcp: "…"}); empty:
	// an http probe of /healthz through the published port; "-": no ready key.
	ready string
	// labels, when not nil, make it an app discovered from its container's
	// labels (reaper.enable, reaper.app_id and its ready probe, then these)
	// rather than one of paas.docker.apps.
	labels []string
}

type dockerEnv struct {
	t     *testing.T
	proxy *dockertest.Proxy
	image string
	apps  map[string]*dockerApp
	p     *reaperProc
	dir   string // reaper's directory, kept across restarts
	host  string // the engine reaper drives; empty: the proxy
	// hostName, when set, puts that engine in paas.docker.hosts[] under this
	// name rather than in paas.docker.host.
	hostName string
}

func newDockerEnv(t *testing.T) *dockerEnv {
	t.Helper()
	dockertest.Require(t)
	return &dockerEnv{t: t, proxy: dockertest.NewProxy(t), image: dockertest.BuildImage(t, "cmd/demoapp"), apps: map[string]*dockerApp{}}
}

// add creates the app's container (stopped); opts go to docker create, flags to
// the demo app.
func (e *dockerEnv) add(a dockerApp, opts []string, flags ...string) *dockerApp {
	e.t.Helper()
	a.addr = freeport.Addr(e.t)
	args := append([]string{"-p", a.addr + ":8080"}, opts...)
	if a.labels != nil {
		args = append(args, "--label", "reaper.enable=true", "--label", "reaper.app_id="+a.id, "--label", "reaper.ready.http=http://"+a.addr+"/healthz")
		for _, l := range a.labels {
			args = append(args, "--label", l)
		}
	}
	args = append(append(args, e.image, "--listen", ":8080", "--name", a.id, "--shutdown-timeout", "1s"), flags...)
	a.container = dockertest.Create(e.t, a.id, args...)
	e.apps[a.id] = &a
	return &a
}

func (e *dockerEnv) config() string {
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
  driver: docker
  docker:
    %s
    apps:
`, dockerAdminToken, e.engineConfig())
	for _, a := range e.apps {
		if a.labels != nil {
			continue // discovered
		}
		method := a.stopMethod
		if method == "" {
			method = "stop"
		}
		ready := fmt.Sprintf(", ready: {http: \"http://%s/healthz\"}", a.addr)
		switch a.ready {
		case "":
		case "-":
			ready = ""
		default:
			ready = ", ready: " + a.ready
		}
		fmt.Fprintf(&b, "      - {id: %s, container: %s, stop_method: %s, stop_timeout: 3s%s}\n", a.id, a.container, method, ready)
	}
	b.WriteString("routes:\n")
	for _, a := range e.apps {
		extra := ""
		if a.plugin != "" {
			extra = ", " + a.plugin
		}
		grace, fail := a.grace, a.failTimeout
		if grace == "" {
			grace = "60s"
		}
		if fail == "" {
			fail = "15s"
		}
		fmt.Fprintf(&b, "  - id: %s\n    frontend: {domains: [%s.test]}\n    backend: {targets: [\"http://%s\"]}\n    plugins:\n      - plugin: reaper\n        config: {app_id: %s, grace_period: %s, fail_timeout: %s%s}\n",
			a.id, a.id, a.addr, a.id, grace, fail, extra)
	}
	return b.String()
}

// engineConfig is the engine's key of paas.docker: host, or hosts[].
func (e *dockerEnv) engineConfig() string {
	host := cmp.Or(e.host, e.proxy.Host())
	if e.hostName != "" {
		return fmt.Sprintf("hosts: [{name: %s, host: %q}]", e.hostName, host)
	}
	return "host: " + host
}

func (e *dockerEnv) start() *reaperProc {
	e.t.Helper()
	if e.dir == "" {
		e.dir = e.t.TempDir()
	}
	e.p = startReaper(e.t, e.dir, e.config())
	return e.p
}

// status is the app's status as reaper gives it through the status header.
func (e *dockerEnv) status(id string) string {
	resp, err := e.p.request("GET", id+".test", "/", nil, "CleverCloud-Reaper", "status")
	if err != nil {
		return "unreachable"
	}
	defer resp.Body.Close()
	var st struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st.Status
}

func (e *dockerEnv) waitStatus(id, status string, limit time.Duration) {
	e.t.Helper()
	var last string
	if !testwait.Until(limit, func() bool { last = e.status(id); return last == status }) {
		e.t.Fatalf("%s: %s after %v, want %s; logs:\n%s", id, last, limit, status, warnLines(e.p))
	}
}

// adminApp is GET /api/apps/{id} on the admin API.
func (e *dockerEnv) adminApp(id string) map[string]any {
	e.t.Helper()
	return e.adminGet("/api/apps/" + id)
}

// adminGet is a GET of the admin API, decoded.
func (e *dockerEnv) adminGet(path string) map[string]any {
	e.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+e.p.admin+path, nil)
	req.Header.Set("Authorization", "Bearer "+dockerAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(readAll(e.t, resp)), &v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

func TestDocker_WakeOnRequestHoldsUnavailableAndWaitingPage(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	held := e.add(dockerApp{id: "held"}, nil, "--boot-delay", "500ms")
	e.add(dockerApp{id: "api", plugin: "api_behavior: unavailable"}, nil)
	e.add(dockerApp{id: "page"}, nil, "--boot-delay", "500ms")
	p := e.start()

	began := time.Now()
	resp, err := p.request("GET", "held.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"name":"held"`) {
		t.Fatalf("held request: %d %s, want the app's answer", resp.StatusCode, body)
	}
	t.Logf("a held request on a sleeping container answered after %s", time.Since(began))
	if s := dockertest.State(t, held.container); s != "running" {
		t.Errorf("held app's container is %s, want running", s)
	}

	resp, err = p.request("GET", "api.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("unavailable route: %d (Retry-After %q) %s, want 503 at once", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	e.waitStatus("api", "Up", 15*time.Second) // the 503 asked for the wake

	resp, err = p.request("GET", "page.test", "/", nil, "Accept", "text/html")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 503 || !strings.Contains(body, "<html") {
		t.Errorf("a browser: %d %.200s, want the waiting page", resp.StatusCode, body)
	}
	e.waitStatus("page", "Up", 15*time.Second)
}

func TestDocker_OneStartFor200ConcurrentRequests(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	a := e.add(dockerApp{id: "crowd"}, nil, "--boot-delay", "300ms")
	p := e.start()
	var wg sync.WaitGroup
	codes := make(chan int, 200)
	for range 200 {
		wg.Go(func() {
			resp, err := p.request("GET", "crowd.test", "/", nil)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	bad := map[int]int{}
	for c := range codes {
		if c != 200 {
			bad[c]++
		}
	}
	if len(bad) > 0 {
		t.Errorf("answers other than 200: %v", bad)
	}
	if n := e.proxy.Starts(dockertest.ID(t, a.container)); n != 1 {
		t.Errorf("200 concurrent requests sent %d starts, want 1", n)
	}
}

func TestDocker_SleepsAfterTheGracePeriod(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"stop", "pause"} {
		t.Run(method, func(t *testing.T) {
			e := newDockerEnv(t)
			a := e.add(dockerApp{id: "nap", stopMethod: method, grace: "2s"}, nil)
			p := e.start()
			resp, err := p.request("GET", "nap.test", "/", nil)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			last := time.Now()
			want := map[string]string{"stop": "exited", "pause": "paused"}[method]
			testwait.For(t, 20*time.Second, "the container to be put to sleep", func() bool { return dockertest.State(t, a.container) == want })
			if idle := time.Since(last); idle < 2*time.Second {
				t.Errorf("put to sleep %s after the last request, before the 2s grace period", idle)
			}
			e.waitStatus("nap", "Down", 10*time.Second)
			// The memory it held awake, read from the engine's stats, prices
			// the savings.
			if gib, _ := e.adminGet("/api/apps/nap/savings")["gib"].(float64); gib <= 0 {
				t.Errorf("savings: %v, want the memory the container held awake", e.adminGet("/api/apps/nap/savings"))
			}
			// And it wakes again from there.
			resp, err = p.request("GET", "nap.test", "/", nil)
			if err != nil {
				t.Fatal(err)
			}
			if body := readAll(t, resp); resp.StatusCode != 200 {
				t.Errorf("after the sleep: %d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestDocker_ContainerBackByItselfSleepsAgainOnTime(t *testing.T) {
	t.Parallel()
	// A container with restart: always started from outside (docker start)
	// while reaper runs: an event "start" that no start of reaper's caused. The
	// engine's own restart, which brings such a container back too, is
	// TestDocker_EngineRestartBringsBackAContainerThatSleepsAgainOnTime.
	e := newDockerEnv(t)
	a := e.add(dockerApp{id: "back", grace: "2s"}, []string{"--restart", "always"})
	p := e.start()
	e.waitStatus("back", "Down", 10*time.Second)
	dockertest.Docker(t, "start", a.container)
	came := time.Now()
	p.waitLog(func(l map[string]any) bool {
		msg, _ := l["msg"].(string)
		return l["app"] == "back" && strings.Contains(msg, `restart policy "always"`)
	}, 10*time.Second)
	e.waitStatus("back", "Up", 10*time.Second)
	testwait.For(t, 20*time.Second, "the container to be put back to sleep", func() bool { return dockertest.State(t, a.container) == "exited" })
	if took := time.Since(came); took < 2*time.Second {
		t.Errorf("put back to sleep %s after it came back, before its 2s grace period", took)
	}
	e.waitStatus("back", "Down", 10*time.Second)
	if n := e.proxy.Starts(dockertest.ID(t, a.container)); n != 0 {
		t.Errorf("reaper started the container %d times; nobody asked", n)
	}
	// No flapping: the engine does not bring back a container that was stopped,
	// and reaper put it to sleep once.
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "container put to sleep" && l["app"] == "back" }, 5*time.Second)
	if n := strings.Count(p.logText(), `"msg":"container put to sleep"`); n != 1 {
		t.Errorf("put to sleep %d times, want 1", n)
	}
}

func TestDocker_EngineUnreachableHeldRequestAnsweredAtTheFailTimeout(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	// The wake asked during the outage is sent once the engine is back, and
	// must be ready within the fail timeout: a docker start alone takes 3 to
	// 4.5 s on a loaded machine with fuse-overlayfs, so 3 s made the app go to
	// Error, and the request after the engine's return got 504.
	const failTimeout = 8 * time.Second
	e.add(dockerApp{id: "cut", failTimeout: failTimeout.String()}, nil)
	p := e.start()
	e.waitStatus("cut", "Down", 10*time.Second)
	e.proxy.Down()
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "docker engine lost: reconnecting" }, 10*time.Second)
	began := time.Now()
	resp, err := p.request("GET", "cut.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	took := time.Since(began)
	if resp.StatusCode != 504 && resp.StatusCode != 503 {
		t.Errorf("held request without an engine: %d %s, want 503/504", resp.StatusCode, body)
	}
	if took > failTimeout+2*time.Second {
		t.Errorf("held request answered after %s, beyond its %s fail timeout", took, failTimeout)
	}
	if !strings.Contains(p.logText(), "unreachable") {
		t.Error("the log never says the engine is unreachable")
	}
	e.proxy.Up()
	// The driver reconnects within its back-off (at most 5 s).
	testwait.For(t, 10*time.Second, "the driver to reconnect", func() bool {
		return strings.Count(p.logText(), `"msg":"docker engine connected"`) >= 2
	})
	resp, err = p.request("GET", "cut.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Errorf("once the engine is back: %d %s, want the app's answer", resp.StatusCode, body)
	}
}

func TestDocker_ContainerRemovedByHandIsAnErrorWithItsCause(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	a := e.add(dockerApp{id: "rm"}, nil)
	p := e.start()
	e.waitStatus("rm", "Down", 10*time.Second)
	dockertest.Docker(t, "rm", a.container)
	resp, err := p.request("GET", "rm.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	e.waitStatus("rm", "Error", 10*time.Second)
	v := e.adminApp("rm")
	cause := fmt.Sprint(v["error_cause"], " ", v["cause"])
	// The driver's own words (Observe), or the start's refusal if a wake came first.
	if !strings.Contains(cause, a.container+`" is gone from engine`) && !strings.Contains(cause, "no longer exists") {
		t.Errorf("Error cause %q (record %v), want it to name the container as gone", cause, v)
	}
	select {
	case <-p.exited:
		t.Fatal("reaper exited")
	default:
	}
}

func TestDocker_RestartedReaperAdoptsARunningContainer(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	a := e.add(dockerApp{id: "kept"}, nil)
	p := e.start()
	resp, err := p.request("GET", "kept.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	e.waitStatus("kept", "Up", 10*time.Second)
	started := dockertest.StartedAt(t, a.container)

	p.kill()
	p = e.start() // the same data directory
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "adopted a running container" && l["app"] == "kept" }, 10*time.Second)
	e.waitStatus("kept", "Up", 10*time.Second)
	resp, err = p.request("GET", "kept.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Errorf("after reaper's restart: %d %s", resp.StatusCode, body)
	}
	if again := dockertest.StartedAt(t, a.container); !again.Equal(started) {
		t.Errorf("the container was restarted (%s, then %s): it should have been adopted", started, again)
	}
	if n := e.proxy.Starts(dockertest.ID(t, a.container)); n != 1 {
		t.Errorf("%d starts, want 1 (the wake before the restart)", n)
	}
}

func TestDocker_OneShotContainerThatExitsIsNeverRestarted(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	e.add(dockerApp{id: "web"}, nil)
	// A migration: opted in by label, no route, exits on its own (status 3).
	job := e.add(dockerApp{id: "migrate"}, []string{"--label", "reaper.enable=true"}, "--fail-after", "300ms")
	delete(e.apps, "migrate") // declared nowhere: discovered from its label only
	p := e.start()
	dockertest.Docker(t, "start", job.container)
	p.waitLog(func(l map[string]any) bool {
		msg, _ := l["msg"].(string)
		return strings.HasPrefix(msg, "container stopped") && l["container"] == job.container
	}, 15*time.Second)
	// The job passes every second: give it three to do the wrong thing.
	id := dockertest.ID(t, job.container)
	if testwait.Until(3*time.Second, func() bool { return e.proxy.Starts(id) > 0 }) {
		t.Errorf("reaper started a one-shot container that no route asks for")
	}
	if s := dockertest.State(t, job.container); s != "exited" {
		t.Errorf("the one-shot container is %s, want exited", s)
	}
}

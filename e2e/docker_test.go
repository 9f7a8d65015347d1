package e2e

import (
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
	plugin              string // extra reaper plugin keys, as YAML flow items
}

type dockerEnv struct {
	t     *testing.T
	proxy *dockertest.Proxy
	image string
	apps  map[string]*dockerApp
	p     *reaperProc
}

func newDockerEnv(t *testing.T) *dockerEnv {
	t.Helper()
	dockertest.Require(t)
	t.Cleanup(dockertest.RemoveImages)
	return &dockerEnv{t: t, proxy: dockertest.NewProxy(t), image: dockertest.BuildImage(t, "cmd/demoapp"), apps: map[string]*dockerApp{}}
}

// add creates the app's container (stopped); opts go to docker create, flags to
// the demo app.
func (e *dockerEnv) add(a dockerApp, opts []string, flags ...string) *dockerApp {
	e.t.Helper()
	a.addr = freeport.Addr(e.t)
	args := append([]string{"-p", a.addr + ":8080"}, opts...)
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
reaper:
  job_interval: 1s
  fast_interval: 200ms
paas:
  driver: docker
  docker:
    host: %s
    apps:
`, dockerAdminToken, e.proxy.Host())
	for _, a := range e.apps {
		method := a.stopMethod
		if method == "" {
			method = "stop"
		}
		fmt.Fprintf(&b, "      - {id: %s, container: %s, stop_method: %s, stop_timeout: 3s, ready: {http: \"http://%s/healthz\"}}\n", a.id, a.container, method, a.addr)
	}
	b.WriteString("routes:\n")
	for _, a := range e.apps {
		extra := ""
		if a.plugin != "" {
			extra = ", " + a.plugin
		}
		grace := a.grace
		if grace == "" {
			grace = "60s"
		}
		fmt.Fprintf(&b, "  - id: %s\n    frontend: {domains: [%s.test]}\n    backend: {targets: [\"http://%s\"]}\n    plugins:\n      - plugin: reaper\n        config: {app_id: %s, grace_period: %s, fail_timeout: 15s%s}\n",
			a.id, a.id, a.addr, a.id, grace, extra)
	}
	return b.String()
}

func (e *dockerEnv) start() *reaperProc {
	e.t.Helper()
	e.p = startReaper(e.t, e.t.TempDir(), e.config())
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
	req, _ := http.NewRequest("GET", "http://"+e.p.admin+"/api/apps/"+id, nil)
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

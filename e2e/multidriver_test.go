package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// One node, two drivers (paas.driver: [process, docker]): a local process of
// the demo app and a container of it, each behind its route. Each wakes on a
// request (one start each, by its own driver), sleeps after its 2 s grace
// period, and the admin API lists both.
func TestMultiDriver_ProcessAndContainerSideBySide(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	web := e.add(dockerApp{id: "web"}, nil)
	procAddr := freeport.Addr(t)
	yaml := fmt.Sprintf(`
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
  driver: [process, docker]
  apps:
    - {id: proc, command: ["%%DEMOAPP%%", "--listen", %q, "--name", proc], ready: {tcp: %q}, stop_timeout: 3s}
  docker:
    %s
    apps:
      - {id: web, container: %s, stop_timeout: 3s, ready: {http: "http://%s/healthz"}}
routes:
  - id: proc
    frontend: {domains: [proc.test]}
    backend: {targets: ["http://%s"]}
    plugins: [{plugin: reaper, config: {app_id: proc, grace_period: 2s, fail_timeout: 20s}}]
  - id: web
    frontend: {domains: [web.test]}
    backend: {targets: ["http://%s"]}
    plugins: [{plugin: reaper, config: {app_id: web, grace_period: 2s, fail_timeout: 20s}}]
`, dockerAdminToken, procAddr, procAddr, e.engineConfig(), web.container, web.addr, procAddr, web.addr)
	e.dir = t.TempDir()
	e.p = startReaper(t, e.dir, yaml)
	p := e.p
	e.waitStatus("proc", "Down", 10*time.Second)
	e.waitStatus("web", "Down", 10*time.Second)

	code, proc, _ := getApp(t, p, "proc.test")
	if code != 200 || proc.Name != "proc" || !alive(proc.PID) {
		t.Fatalf("proc.test: %d %+v, want the process app's answer", code, proc)
	}
	code, got, _ := getApp(t, p, "web.test")
	if code != 200 || got.Name != "web" {
		t.Fatalf("web.test: %d %+v, want the container's answer", code, got)
	}
	if s := dockertest.State(t, web.container); s != "running" {
		t.Errorf("container %s after its wake, want running", s)
	}
	if ids := listedApps(t, p); !slices.Contains(ids, "proc") || !slices.Contains(ids, "web") {
		t.Errorf("admin API lists %v, want proc and web", ids)
	}

	testwait.For(t, 20*time.Second, "the process to be put to sleep", func() bool { return !alive(proc.PID) })
	testwait.For(t, 20*time.Second, "the container to be put to sleep", func() bool { return dockertest.State(t, web.container) == "exited" })
	e.waitStatus("proc", "Down", 10*time.Second)
	e.waitStatus("web", "Down", 10*time.Second)
	for _, id := range []string{"proc", "web"} {
		if n := starts(p, id); n != 1 {
			t.Errorf("%s woken %d times, want once", id, n)
		}
		p.waitLog(func(l map[string]any) bool { return l["msg"] == "app put to sleep" && l["app"] == id }, 5*time.Second)
	}
	for _, l := range p.logs() {
		if l["level"] == "ERROR" {
			t.Errorf("error logged: %v", l)
		}
	}
}

// listedApps are the ids GET /api/apps lists.
func listedApps(t *testing.T, p *reaperProc) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+p.admin+"/api/apps", nil)
	req.Header.Set("Authorization", "Bearer "+dockerAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var views []struct {
		ID string `json:"app_id"`
	}
	if body := readAll(t, resp); json.Unmarshal([]byte(body), &views) != nil {
		t.Fatalf("GET /api/apps: %d %s", resp.StatusCode, body)
	}
	ids := make([]string, len(views))
	for i, v := range views {
		ids[i] = v.ID
	}
	return ids
}

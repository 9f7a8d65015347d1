package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
)

// imageConfig is the smallest configuration that proves the image serves: no
// platform (the process driver with no app: there is nothing to run in a
// scratch image), and a route whose backend is the node's own admin listener,
// so that a request goes through the gateway's proxy and back.
const imageConfig = `node: {id: image, listen: "0.0.0.0:8080", admin_listen: "0.0.0.0:9090", data_dir: /data, shutdown_timeout: 2s}
routes:
  - id: self
    frontend: {domains: [self.test]}
    backend: {targets: ["http://127.0.0.1:9090"]}
`

// healthState is the container's health as the engine keeps it.
type healthState struct {
	Status string
	Log    []struct {
		ExitCode int
		Output   string
	}
}

// reaper's own image, as make image builds it (Dockerfile, scripts/image.sh):
// run with its defaults and a configuration mounted where its CMD reads it, it
// becomes healthy through its HEALTHCHECK (reaper health), runs as user 65532,
// answers /healthz on the published admin port, and its gateway proxies.
func TestImage_RunsAsNonRootBecomesHealthyAndServes(t *testing.T) {
	dockertest.Require(t)
	image := dockertest.BuildReaperImage(t)
	dir := t.TempDir()
	// The image's user reads the mounted file: t.TempDir is 0700.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reaper.yaml"), []byte(imageConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	c := dockertest.Create(t, "node", "-p", "127.0.0.1::8080", "-p", "127.0.0.1::9090",
		"-v", dir+":/etc/reaper:ro", "--health-interval", "300ms", "--health-start-period", "0s", image)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := dockertest.TryDocker("logs", "--tail", "40", c)
			t.Logf("the container's log (end):\n%s", logs)
		}
	})
	dockertest.Docker(t, "start", c)

	var h healthState
	testwait.For(t, 30*time.Second, "the container to be healthy", func() bool {
		out := dockertest.Docker(t, "inspect", "--format", "{{json .State.Health}}", c)
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("docker inspect .State.Health: %v: %s", err, out)
		}
		if h.Status == "unhealthy" || dockertest.State(t, c) != "running" {
			t.Fatalf("the container is %s, health %s: %+v", dockertest.State(t, c), h.Status, h.Log)
		}
		return h.Status == "healthy"
	})
	if last := h.Log[len(h.Log)-1]; last.ExitCode != 0 || last.Output != "http://127.0.0.1:9090/healthz: ok\n" {
		t.Errorf("the last health check: exit %d, %q", last.ExitCode, last.Output)
	}

	if user := dockertest.Docker(t, "inspect", "--format", "{{.Config.User}}", c); user != "65532:65532" {
		t.Errorf("the image's user is %q, want 65532:65532", user)
	}
	// What the processes really run as, as the host's ps sees them: one
	// /reaper serve, and at times the HEALTHCHECK's /reaper health beside it
	// (docker runs it every interval); all of them 65532:65532.
	top := strings.Split(strings.TrimSpace(dockertest.Docker(t, "top", c, "-eo", "pid,uid,gid,args")), "\n")
	serves := 0
	for _, line := range top[1:] {
		f := strings.Fields(line)
		switch {
		case len(f) < 4 || f[1] != "65532" || f[2] != "65532":
			t.Errorf("docker top: a process not run as 65532:65532: %q", line)
		case strings.Contains(line, "/reaper serve --config /etc/reaper/reaper.yaml"):
			serves++
		case !strings.Contains(line, "/reaper health --config /etc/reaper/reaper.yaml"):
			t.Errorf("docker top: a process that is neither /reaper serve nor the health check: %q", line)
		}
	}
	if serves != 1 {
		t.Errorf("docker top: want one /reaper serve, got %d:\n%s", serves, strings.Join(top, "\n"))
	}

	client := &http.Client{Timeout: 5 * time.Second}
	admin, gateway := dockertest.Port(t, c, "9090/tcp"), dockertest.Port(t, c, "8080/tcp")
	resp, err := client.Get("http://" + admin + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("/healthz from the host: %d %q", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", "http://"+gateway+"/readyz", nil)
	req.Host = "self.test"
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("the gateway's route to the admin listener: %d %q", resp.StatusCode, body)
	}
	req.Host = "nobody.test"
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	if readAll(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the gateway for a host no route serves: %d, want 404", resp.StatusCode)
	}
}

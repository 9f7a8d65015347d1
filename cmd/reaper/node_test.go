package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/reaper"
)

// The admin commands' tests run them against a real node, started in this
// process, whose process driver runs the demo app.

// demoBuild is the demo app binary, built once for the tests that need it.
var demoBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if demoBuild.dir != "" {
		os.RemoveAll(demoBuild.dir)
	}
	os.Exit(code)
}

// demoApp returns the path of the demo app, building it the first time.
func demoApp(t *testing.T) string {
	t.Helper()
	demoBuild.once.Do(func() {
		if demoBuild.dir, demoBuild.err = os.MkdirTemp("", "reaper-cmd-test-"); demoBuild.err != nil {
			return
		}
		demoBuild.path = filepath.Join(demoBuild.dir, "demoapp")
		out, err := exec.Command("go", "build", "-o", demoBuild.path, "github.com/reapergw/reaper/cmd/demoapp").CombinedOutput()
		if err != nil {
			demoBuild.err = fmt.Errorf("building the demo app: %v\n%s", err, out)
		}
	})
	if demoBuild.err != nil {
		t.Fatal(demoBuild.err)
	}
	return demoBuild.path
}

// testToken is the admin token of the test nodes: no command may print it.
const testToken = "cli-test-t0ken-5ecret"

// testNode is a running node with two demo apps, hello (priced 3.60 EUR an
// hour) and api, both asleep until asked.
type testNode struct {
	admin    string // http://host:port of its admin API
	gateway  string // host:port of its gateway
	config   string // its configuration file
	dataDir  string
	logs     *logtest.Buffer
	shutdown func() // stops the node (not its apps); idempotent
}

// startTestNode starts a node for the test and stops it, with its apps, at the
// end of the test.
func startTestNode(t *testing.T) *testNode {
	t.Helper()
	return startTestNodeWith(t, "", "")
}

// startTestNodeWith starts a test node whose paas.apps and routes end with
// more (YAML list items, indented as the demo apps').
func startTestNodeWith(t *testing.T, moreApps, moreRoutes string) *testNode {
	t.Helper()
	return startTestNodeTop(t, moreApps, moreRoutes, "")
}

// startTestNodeTop is startTestNodeWith with top-level sections (YAML, from
// column 0) after the routes.
func startTestNodeTop(t *testing.T, moreApps, moreRoutes, top string) *testNode {
	t.Helper()
	demo, dir := demoApp(t), t.TempDir()
	gateway, admin, hello, api := freeport.Addr(t), freeport.Addr(t), freeport.Addr(t), freeport.Addr(t)
	var apps, routes strings.Builder
	for _, a := range []struct{ id, addr, price string }{{"hello", hello, "3.6"}, {"api", api, "0"}} {
		fmt.Fprintf(&apps, "    - {id: %s, command: [%q, \"--listen\", %q, \"--name\", %s], ready: {tcp: %q}, stop_timeout: 3s, price_per_hour: %s}\n",
			a.id, demo, a.addr, a.id, a.addr, a.price)
		fmt.Fprintf(&routes, "  - {id: %s, frontend: {domains: [%s.test]}, backend: {targets: [\"http://%s\"]},\n"+
			"     plugins: [{plugin: reaper, config: {app_id: %s, grace_period: 10m, fail_timeout: 20s}}]}\n", a.id, a.id, a.addr, a.id)
	}
	apps.WriteString(moreApps)
	routes.WriteString(moreRoutes)
	yaml := fmt.Sprintf(`node:
  id: cli
  listen: %s
  admin_listen: %s
  admin_token: %s
  data_dir: %s
  shutdown_timeout: 5s
reaper: {job_interval: 1s, fast_interval: 100ms}
paas:
  driver: process
  apps:
%sroutes:
%s%s`, gateway, admin, testToken, filepath.Join(dir, "data"), apps.String(), routes.String(), top)
	path := filepath.Join(dir, "reaper.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	n, err := startNode(context.Background(), cfg, logs.Logger(slog.LevelDebug), nil)
	if err != nil {
		t.Fatal(err)
	}
	shutdown := sync.OnceFunc(n.shutdown)
	t.Cleanup(func() {
		shutdown()
		killApps(filepath.Join(dir, "data"))
		if t.Failed() {
			t.Logf("the node's log:\n%s", logs.String())
		}
	})
	return &testNode{admin: "http://" + admin, gateway: gateway, config: path, dataDir: filepath.Join(dir, "data"), logs: logs, shutdown: shutdown}
}

// killApps ends the apps the process driver left running (apps outlive reaper
// on purpose): the process groups its pid files name.
func killApps(dataDir string) {
	files, _ := filepath.Glob(filepath.Join(dataDir, "process", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec struct {
			PGID int `json:"pgid"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.PGID > 1 {
			syscall.Kill(-rec.PGID, syscall.SIGKILL)
		}
	}
}

// result is how a command ended.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the command with REAPER_ADMIN_TOKEN and USER (alice) set, and
// checks that the token is printed nowhere.
func runCLI(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	env := func(k string) (string, bool) {
		switch k {
		case "REAPER_ADMIN_TOKEN":
			return testToken, true
		case "USER":
			return "alice", true
		}
		return "", false
	}
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, env, &stdout, &stderr)
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var code exitCode
	switch {
	case err == nil:
	case errors.As(err, &code):
		r.code = int(code)
	default:
		t.Fatalf("%s: %v", args, err)
	}
	if strings.Contains(r.stdout+r.stderr, testToken) {
		t.Errorf("%s printed the admin token:\n%s\n%s", args, r.stdout, r.stderr)
	}
	return r
}

// cli runs a command against the node.
func (n *testNode) cli(t *testing.T, args ...string) result {
	t.Helper()
	return runCLI(t, context.Background(), append(args, "--admin", n.admin)...)
}

// app reads an app through `reaper app ID --json`.
func (n *testNode) app(t *testing.T, id string) reaper.AppView {
	t.Helper()
	r := n.cli(t, "app", id, "--json")
	var a reaper.AppView
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &a) != nil {
		t.Fatalf("reaper app %s --json: %d\n%s%s", id, r.code, r.stdout, r.stderr)
	}
	return a
}

// waitStatus waits until the app has the status.
func (n *testNode) waitStatus(t *testing.T, id string, want reaper.Status) {
	t.Helper()
	var last reaper.Status
	if !testwait.Until(20*time.Second, func() bool { last = n.app(t, id).Status; return last == want }) {
		t.Fatalf("%s is %s, not %s, after 20s", id, last, want)
	}
}

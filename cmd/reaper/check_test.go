package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck_SaysWhatEachContainerStartProbes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reaper.yaml")
	const cfg = `
paas:
  driver: docker
  docker:
    apps:
      - {id: web, container: web-1, ready: {tcp: "127.0.0.1:8081"}}
      - {id: db, container: db-1}
routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:8081"]}
    plugins: [{plugin: reaper, config: {app_id: web}}]
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := func(string) (string, bool) { return "", false }
	if err := run(context.Background(), []string{"check", "--config", file}, env, &stdout, &stderr); err != nil {
		t.Fatalf("check: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"ok (1 route, driver docker, store memory)\ncontainer readiness, probed at each start:\n",
		"\n  web (container web-1): tcp 127.0.0.1:8081 → if the container publishes that port: the container's own address and the port it maps to",
		"\n  db (container db-1): no ready: tcp to the container's own address on its first published port (or its only exposed port)",
		"\n  apps from labels: reaper.ready.tcp or reaper.ready.http as above",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("reaper check said:\n%s\nwant %q in it", out, want)
		}
	}
}

func TestCheck_WarnsOfAnOpenAdminDoor(t *testing.T) {
	check := func(node string) string {
		t.Helper()
		file := filepath.Join(t.TempDir(), "reaper.yaml")
		if err := os.WriteFile(file, []byte("node:\n"+node), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		env := func(k string) (string, bool) {
			return map[string]string{"SHORT": "hunter2", "LONG": "0123456789abcdef"}[k], true
		}
		if err := run(context.Background(), []string{"check", "--config", file}, env, &stdout, &stderr); err != nil {
			t.Fatalf("check: %v\n%s", err, stderr.String())
		}
		return stdout.String()
	}
	out := check("  admin_token: ${SHORT}\n  admin_listen: 0.0.0.0:9090\n")
	for _, want := range []string{
		"\nwarning: node.admin_token: is 7 characters long; use at least 16 random ones",
		"\nwarning: node.admin_listen: \"0.0.0.0:9090\" is reachable from other machines and serves plain HTTP",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("reaper check said:\n%s\nwant %q in it", out, want)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("the warning shows the token:\n%s", out)
	}
	for _, node := range []string{
		"  admin_token: ${LONG}\n  admin_listen: 127.0.0.1:9090\n",
		"  admin_token: ${LONG}\n  admin_listen: \"[::1]:9090\"\n",
		"  admin_token: ${LONG}\n  admin_listen: localhost:9090\n",
		"  admin_listen: 0.0.0.0:9090\n", // no token: no admin API to reach
	} {
		if out := check(node); strings.Contains(out, "warning") {
			t.Errorf("%s: a warning:\n%s", node, out)
		}
	}
}

func TestCheck_CountsTCPRoutesAndNotesARedisProbeWithoutAPassword(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reaper.yaml")
	const cfg = `
paas:
  driver: process
  apps:
    - {id: cache, command: [redis-server], ready: {redis: "127.0.0.1:6380"}}
tcp_routes:
  - {id: cache, listen: "127.0.0.1:6379", app_id: cache, target: "127.0.0.1:6380", mode: keep_connections}
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := func(string) (string, bool) { return "", false }
	if err := run(context.Background(), []string{"check", "--config", file}, env, &stdout, &stderr); err != nil {
		t.Fatalf("check: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{
		"ok (0 routes, 1 tcp route, driver process, store memory)",
		"note: paas.apps[0].ready: redis 127.0.0.1:6380 without a password",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("reaper check said:\n%s\nwant %q in it", stdout.String(), want)
		}
	}
}

// A route's busy_url that differs from the app's own entry's is a warning,
// not an error: the file is valid, and the warning says which field holds
// which and that the route's is used, without the URLs' queries.
func TestCheck_WarnsWhenARoutesBusyURLHidesTheAppsOwn(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reaper.yaml")
	const cfg = `
paas:
  driver: docker
  docker:
    apps:
      - {id: worker, container: worker-1, busy_url: "http://127.0.0.1:3001/busy?token=${TOKEN}"}
routes:
  - id: worker
    frontend: {domains: [worker.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins: [{plugin: reaper, config: {app_id: worker, busy_url: "http://127.0.0.1:3001/jobs?token=${TOKEN}"}}]
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := func(k string) (string, bool) { return "s3cret", k == "TOKEN" }
	if err := run(context.Background(), []string{"check", "--config", file}, env, &stdout, &stderr); err != nil {
		t.Fatalf("check: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	want := "\nwarning: routes[0].plugins[0].config.busy_url: http://127.0.0.1:3001/jobs differs from the busy_url of app " +
		`"worker" at paas.docker.apps[0].busy_url, http://127.0.0.1:3001/busy: the route's is used`
	if !strings.Contains(out, want) {
		t.Errorf("reaper check said:\n%s\nwant %q in it", out, want)
	}
	if strings.Contains(out+stderr.String(), "s3cret") {
		t.Errorf("reaper check shows the token:\n%s%s", out, stderr.String())
	}
}

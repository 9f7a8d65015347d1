package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/ratelimit"
)

// The node's doors to the admin token share one budget per client: wrong
// tokens at the admin API and at the gateway's preview add up, and the client
// is keyed behind the trusted proxy, so the admin next to it still gets in.
func TestServe_AdminDoorsShareOneBudgetPerClient(t *testing.T) {
	dir := t.TempDir()
	gw, admin, app := freeport.Addr(t), freeport.Addr(t), freeport.Addr(t)
	yaml := fmt.Sprintf(`node:
  id: door
  listen: %s
  admin_listen: %s
  admin_token: %s
  data_dir: %s
  trusted_proxies: [127.0.0.1]
paas:
  driver: process
  apps:
    - {id: web, command: ["/bin/false"], ready: {tcp: %q}}
routes:
  - {id: web, frontend: {domains: [web.test]}, backend: {targets: ["http://%s"]},
     plugins: [{plugin: reaper, config: {app_id: web}}]}
`, gw, admin, testToken, filepath.Join(dir, "data"), app, app)
	path := filepath.Join(dir, "reaper.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	n, err := startNode(context.Background(), cfg, logs.Logger(slog.LevelInfo), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.shutdown()

	call := func(url, host, client, token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = host
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	api := func(client, token string) int { return call("http://"+admin+"/api/apps", "", client, token) }
	preview := func(client, token string) int {
		return call("http://"+gw+"/.well-known/reaper/preview", "web.test", client, token)
	}
	const bad = "198.51.100.50"
	for i := range ratelimit.DoorBurst {
		code := 0
		if i%2 == 0 {
			code = api(bad, "guess")
		} else {
			code = preview(bad, "guess")
		}
		if code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, code)
		}
	}
	if code := api(bad, testToken); code != http.StatusTooManyRequests {
		t.Errorf("the admin API after 5 failures at two doors: %d, want 429", code)
	}
	if code := preview(bad, testToken); code != http.StatusTooManyRequests {
		t.Errorf("the preview after 5 failures at two doors: %d, want 429", code)
	}
	if code := api("198.51.100.51", testToken); code != http.StatusOK {
		t.Errorf("another admin behind the same proxy: %d, want 200", code)
	}
	if n := logs.Lines("failed attempts at the admin token", "client="+bad); n != 1 {
		t.Errorf("%d lines of failed attempts for the client, want 1 (at once, then once a minute):\n%s", n, logs.String())
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A group's id: the actions print one line per member, and `reaper groups`
// lists the groups.
func TestGroupCmds_ActOnEachMemberAndList(t *testing.T) {
	admin := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /api/apps/shop/_wake":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"group_id": "shop", "members": [{"app_id": "api", "code": 202, "answer": {"app_id": "api"}},
				{"app_id": "web", "code": 202, "answer": {"app_id": "web"}}]}`)
		case "POST /api/apps/shop/_sleep":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"group_id": "shop", "members": [{"app_id": "web", "code": 202}, {"app_id": "api", "code": 409, "error": "the app is already Down"}]}`)
		case "GET /api/groups":
			fmt.Fprint(w, `[{"group_id": "shop", "apps": ["api", "web"], "status": "Mixed", "in_use": true, "why": "web",
				"grace_period": "15m0s", "sleep_at": null, "members": [{"app_id": "api", "status": "Down"}, {"app_id": "web", "status": "Up"}]}]`)
		default:
			http.NotFound(w, r)
		}
	})
	r := runCLI(t, context.Background(), "wake", "shop", "--admin", admin)
	if r.code != 0 || r.stdout != "shop/api: wake asked\nshop/web: wake asked\n" {
		t.Errorf("wake shop: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, context.Background(), "sleep", "shop", "--admin", admin)
	if r.code != 0 || r.stdout != "shop/web: going to sleep\nshop/api: not done: the app is already Down\n" {
		t.Errorf("sleep shop: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, context.Background(), "groups", "--admin", admin)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "shop\tMixed\tin use (web)\tgrace 15m0s\tsleeps -\tapi=Down web=Up\n") {
		t.Errorf("groups: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// reaper check names each group problem by its field.
func TestCheck_GroupProblemsNameTheirField(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reaper.yaml")
	const cfg = `
paas:
  driver: process
  apps:
    - {id: web, command: [web], ready: {tcp: "127.0.0.1:3001"}, depends_on: [api]}
    - {id: api, command: [api], ready: {tcp: "127.0.0.1:3002"}, depends_on: [web]}
routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins: [{plugin: reaper, config: {app_id: web}}]
groups:
  - {id: shop, apps: [web, wroker]}
  - {id: api, apps: [web]}
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := func(string) (string, bool) { return "", false }
	if err := run(context.Background(), []string{"check", "--config", file}, env, &stdout, &stderr); err == nil {
		t.Fatalf("check passed:\n%s", stdout.String())
	}
	for _, want := range []string{
		`groups[0].apps[1]: "wroker" is not an app of paas.apps`,
		`groups[1].id: "api" is the id of an app`,
		`groups[1].apps[0]: "web" is already in groups[0]`,
		`paas.apps: depends_on makes a cycle: api → web → api`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("reaper check said:\n%s\nwant %q in it", stderr.String(), want)
		}
	}
}

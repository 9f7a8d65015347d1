package main

import (
	"context"
	"fmt"
	"net/http"
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

package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// groupConfig is three demo apps as one group "shop": web (a route, grace
// 4s, depends_on api), api (a route, grace 2s) and worker (no route: woken by
// its group, on the group's clock).
func groupConfig(t *testing.T) string {
	web, api, worker := app{id: "web", addr: freeport.Addr(t)}, app{id: "api", addr: freeport.Addr(t)}, app{id: "worker", addr: freeport.Addr(t)}
	cfg := reaperConfig(web, api, worker)
	// worker has no route: cut its route out.
	i := strings.Index(cfg, "  - id: worker\n    frontend:")
	cfg = cfg[:i]
	cfg = strings.Replace(cfg, "config: {app_id: web, grace_period: 60s", "config: {app_id: web, grace_period: 4s", 1)
	cfg = strings.Replace(cfg, "config: {app_id: api, grace_period: 60s", "config: {app_id: api, grace_period: 2s", 1)
	cfg = strings.Replace(cfg, "      stop_timeout: 3s\n", "      stop_timeout: 3s\n      depends_on: [api]\n", 1) // web's
	cfg = strings.Replace(cfg, "  shutdown_timeout: 5s\n", "  shutdown_timeout: 5s\n  admin_token: "+e2eAdminToken+"\n", 1)
	cfg += "groups:\n  - {id: shop, apps: [web, api, worker]}\n"
	return cfg
}

// logIndex is the index of the first log line that pred accepts, -1 if none.
func logIndex(p *reaperProc, pred func(map[string]any) bool) int {
	return slices.IndexFunc(p.logs(), pred)
}

func statusChanged(app, to string) func(map[string]any) bool {
	return func(l map[string]any) bool {
		return l["msg"] == "app status changed" && l["app"] == app && l["to"] == to
	}
}

func woken(app string) func(map[string]any) bool {
	return func(l map[string]any) bool { return l["msg"] == "app woken" && l["app"] == app }
}

// sleptOrder is the order in which the apps were put to sleep since log line
// from.
// The status changes are logged in the order they were stored (the job logs
// each before it looks at the apps it concerns).
func sleptOrder(p *reaperProc, from int) []string {
	var out []string
	for _, l := range p.logs()[from:] {
		if l["msg"] == "app status changed" && l["to"] == "WaitingForShutdown" {
			out = append(out, l["app"].(string))
		}
	}
	return out
}

func allDown(p *reaperProc, from int, apps ...string) bool {
	logs := p.logs()[from:]
	for _, a := range apps {
		if !slices.ContainsFunc(logs, statusChanged(a, "Down")) {
			return false
		}
	}
	return true
}

// A request to the web app wakes the whole group, each member started once,
// web after api (depends_on); traffic on api alone keeps all three up past
// web's grace period; once idle, they sleep together, in reverse order
// (worker, web, api), no sooner than the longest grace period.
func TestGroups_ARequestWakesTheGroupAndTheyAllSleepTogether(t *testing.T) {
	cfg := groupConfig(t)
	p := startReaper(t, t.TempDir(), cfg)
	testwait.For(t, 15*time.Second, "every member Down", func() bool { return allDown(p, 0, "web", "api", "worker") })

	code, ans, _ := getApp(t, p, "web.test")
	if code != 200 || ans.Name != "web" {
		t.Fatalf("web: %d %+v", code, ans)
	}
	// Every member's Up line, web's too: reaper's log is read from a pipe,
	// and may lag behind web's answer.
	testwait.For(t, 15*time.Second, "the group up, the worker woken with it", func() bool {
		return logIndex(p, statusChanged("worker", "Up")) >= 0 && logIndex(p, statusChanged("web", "Up")) >= 0 && logIndex(p, statusChanged("api", "Up")) >= 0
	})
	for _, id := range []string{"web", "api", "worker"} {
		if n := starts(p, id); n != 1 {
			t.Errorf("%s started %d times, want once", id, n)
		}
	}
	if apiUp, webStart := logIndex(p, statusChanged("api", "Up")), logIndex(p, woken("web")); apiUp < 0 || webStart < apiUp {
		t.Errorf("web was started (log line %d) before api was up (line %d): depends_on not honoured", webStart, apiUp)
	}

	// Traffic on api alone, for longer than web's grace period.
	pace := time.NewTicker(300 * time.Millisecond) // a client's pace, not a wait for a condition
	defer pace.Stop()
	var lastTraffic time.Time // when the last request was sent: the group's idle clock starts after it
	for until := time.Now().Add(6 * time.Second); time.Now().Before(until); <-pace.C {
		lastTraffic = time.Now()
		if code, _, _ := getApp(t, p, "api.test"); code != 200 {
			t.Fatalf("api answered %d", code)
		}
	}
	if slept := sleptOrder(p, 0); len(slept) > 0 {
		t.Fatalf("%v put to sleep while api had traffic: the group must stay up", slept)
	}
	from := len(p.logs())
	testwait.For(t, 30*time.Second, "the group asleep", func() bool { return allDown(p, from, "web", "api", "worker") })
	if got := sleptOrder(p, from); !slices.Equal(got, []string{"worker", "web", "api"}) {
		t.Errorf("put to sleep in the order %v, want worker, web, api", got)
	}
	for _, l := range p.logs()[from:] {
		if l["msg"] != "app put to sleep" {
			continue
		}
		// A lower bound only: a loaded machine makes it later, never sooner.
		if at, err := time.Parse(time.RFC3339Nano, l["time"].(string)); err != nil || at.Sub(lastTraffic) < 4*time.Second-500*time.Millisecond {
			t.Errorf("the group slept at %v, %v after its last request: before the longest grace period (4s)", l["time"], at.Sub(lastTraffic))
		}
		break
	}
}

// The operators' actions take the group's id: a wake wakes every member, a
// hold holds each, a sleep puts them to sleep in reverse order; the group's
// view lists its members in start order; an unknown id is a 404.
func TestGroups_OperatorActionsOnAGroupID(t *testing.T) {
	cfg := groupConfig(t)
	p := startReaper(t, t.TempDir(), cfg)
	testwait.For(t, 15*time.Second, "every member Down", func() bool { return allDown(p, 0, "web", "api", "worker") })

	var ans struct {
		GroupID string `json:"group_id"`
		Members []struct {
			AppID string `json:"app_id"`
			Code  int    `json:"code"`
			Error string `json:"error"`
		} `json:"members"`
	}
	if code := groupAction(t, p, "POST", "/api/apps/shop/_wake", `{"by": "e2e"}`, &ans); code != http.StatusAccepted || ans.GroupID != "shop" || len(ans.Members) != 3 {
		t.Fatalf("wake shop: %d %+v\n%s", code, ans, p.logText())
	}
	testwait.For(t, 15*time.Second, "every member Up", func() bool {
		for _, id := range []string{"web", "api", "worker"} {
			if logIndex(p, statusChanged(id, "Up")) < 0 {
				return false
			}
		}
		return true
	})
	var g struct {
		GroupID string   `json:"group_id"`
		Apps    []string `json:"apps"`
		Status  string   `json:"status"`
		Members []struct {
			AppID string `json:"app_id"`
			Hold  *struct {
				By string `json:"by"`
			} `json:"hold"`
		} `json:"members"`
	}
	if code := adminGet(t, p, "/api/groups/shop", &g); code != 200 || !slices.Equal(g.Apps, []string{"api", "web", "worker"}) || g.Status != "Up" {
		t.Errorf("GET /api/groups/shop: %d %+v", code, g)
	}
	if code := groupAction(t, p, "POST", "/api/apps/shop/_hold", `{"duration": "1h", "by": "e2e"}`, &ans); code != 200 || len(ans.Members) != 3 {
		t.Fatalf("hold shop: %d %+v", code, ans)
	}
	adminGet(t, p, "/api/groups/shop", &g)
	for _, m := range g.Members {
		if m.Hold == nil || m.Hold.By != "e2e" {
			t.Errorf("%s: hold %+v after a hold of its group", m.AppID, m.Hold)
		}
	}
	// Held: a sleep without force is refused for the whole group.
	if code := groupAction(t, p, "POST", "/api/apps/shop/_sleep", `{}`, nil); code != http.StatusConflict {
		t.Errorf("sleep of a held group: %d, want 409", code)
	}
	if code := groupAction(t, p, "DELETE", "/api/apps/shop/_hold", `{}`, &ans); code != 200 || len(ans.Members) != 3 {
		t.Fatalf("release shop: %d %+v", code, ans)
	}
	from := len(p.logs())
	if code := groupAction(t, p, "POST", "/api/apps/shop/_sleep", `{"by": "e2e"}`, &ans); code != http.StatusAccepted {
		t.Fatalf("sleep shop: %d %+v", code, ans)
	}
	testwait.For(t, 20*time.Second, "the group asleep", func() bool { return allDown(p, from, "web", "api", "worker") })
	if got := sleptOrder(p, from); !slices.Equal(got, []string{"worker", "web", "api"}) {
		t.Errorf("put to sleep in the order %v, want worker, web, api", got)
	}
	if code := groupAction(t, p, "POST", "/api/apps/nope/_wake", `{}`, nil); code != http.StatusNotFound {
		t.Errorf("wake of an unknown id: %d, want 404", code)
	}
	if code := adminGet(t, p, "/api/groups/nope", nil); code != http.StatusNotFound {
		t.Errorf("GET an unknown group: %d, want 404", code)
	}
}

// groupAction calls the admin API with a body and decodes its answer.
func groupAction(t *testing.T, p *reaperProc, method, path, body string, into any) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+p.admin+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, p.logText())
	}
	defer resp.Body.Close()
	if into != nil {
		_ = json.NewDecoder(resp.Body).Decode(into)
	}
	return resp.StatusCode
}

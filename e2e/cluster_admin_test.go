package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// adminDo calls the admin API of node n with the admin token and returns the
// status and the decoded JSON object of the answer.
func (e *clusterEnv) adminDo(n *clusterNode, method, path, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.adminURL(n, path), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s on %s: %v", method, path, n.id, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// An operator's hold set on a follower reaches the leader, wakes the app, shows
// on every node, refuses a sleep, and outlives the leader's death; released and
// put to sleep from another node, the app sleeps once. Why-is-it-awake merges
// the requests every node saw.
func TestCluster_OperatorActionsFromAnyNodeOutliveTheLeader(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown, grace: "10m"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	old := e.node(lead.ID)
	followers := others(e.nodes, old)
	app := "/api/apps/" + e.ids["web"]

	// Every node exports the cluster's state: one leader, one term.
	leaders, terms := 0.0, map[string]bool{}
	for _, n := range e.nodes {
		m := e.scrape(n)
		leaders += m["reaper_leader"]
		terms[strconv.FormatFloat(m["reaper_raft_term"], 'f', 0, 64)] = true
		if m[`reaper_app_status{app="`+e.ids["web"]+`",status="Down"}`] != 1 {
			t.Errorf("%s: reaper_app_status of web is not Down: %v", n.id, m[`reaper_app_status{app="`+e.ids["web"]+`",status="Down"}`])
		}
	}
	if leaders != 1 || len(terms) != 1 {
		t.Errorf("reaper_leader sums to %v over the nodes, terms %v; want one leader, one term", leaders, terms)
	}

	code, body := e.adminDo(followers[0], "POST", app+"/_hold", `{"duration": "1h", "reason": "nightly backup", "by": "ops"}`)
	if code != 200 {
		t.Fatalf("hold on follower %s: %d %v", followers[0].id, code, body)
	}
	e.waitAppStatus(e.nodes, "web", "Up", 20*time.Second)
	for _, n := range e.nodes {
		testwait.For(t, 5*time.Second, "the hold seen on "+n.id, func() bool {
			_, v := e.adminDo(n, "GET", app, "")
			h, _ := v["hold"].(map[string]any)
			return h["reason"] == "nightly backup" && h["by"] == "ops"
		})
	}
	code, body = e.adminDo(followers[1], "POST", app+"/_sleep", "")
	if msg, _ := body["error"].(string); code != 409 || !strings.Contains(msg, "held awake") {
		t.Fatalf("sleep of a held app on %s: %d %v; want 409 saying it is held", followers[1].id, code, body)
	}

	// Two nodes serve requests with their own user agents; a third node reports both.
	for i, n := range e.nodes[:2] {
		resp, err := n.p.request("GET", "web.test", "/", nil, "User-Agent", "checker-"+string(rune('a'+i)), "Accept", "application/json")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request through %s: %v %v", n.id, resp, err)
		}
		resp.Body.Close()
	}
	code, body = e.adminDo(e.nodes[2], "GET", app+"/awake", "")
	var agents []string
	for _, a := range body["user_agents"].([]any) {
		agents = append(agents, a.(map[string]any)["value"].(string))
	}
	if code != 200 || len(body["nodes"].([]any)) != 3 || !slices.Contains(agents, "checker-a") || !slices.Contains(agents, "checker-b") {
		t.Fatalf("why awake on %s: %d %v; want the three nodes' counters, with both checkers", e.nodes[2].id, code, body)
	}

	old.p.kill()
	next := e.waitLeader(followers, 15*time.Second, old.id)
	survivor := e.node(next.ID)
	other := others(followers, survivor)[0]
	if _, v := e.adminDo(other, "GET", app, ""); v["hold"] == nil {
		t.Fatalf("after the leader died, %s shows no hold: %v", other.id, v)
	}
	if code, body = e.adminDo(other, "DELETE", app+"/_hold", `{"by": "ops"}`); code != 200 || body["released"] != true {
		t.Fatalf("release on %s: %d %v", other.id, code, body)
	}
	// The dead leader's last in-flight counts live in the store until they
	// expire (three flush intervals): until then the sleep is refused as busy,
	// and says so.
	testwait.For(t, 30*time.Second, "the sleep accepted on "+other.id, func() bool {
		code, body = e.adminDo(other, "POST", app+"/_sleep", `{"by": "alice"}`)
		if msg, _ := body["error"].(string); code == 409 && !strings.Contains(msg, "open on the app") {
			t.Fatalf("sleep on %s: %d %v; want 202, or 409 while requests are still counted open", other.id, code, body)
		}
		return code == 202
	})
	e.waitAppStatus(followers, "web", "Down", 20*time.Second)
	e.checkOneStart("web")
	if n := e.apiCalls("web", "DELETE", "/instances"); n != 1 {
		t.Errorf("%d stops at the platform, want 1", n)
	}
	_, hist := e.adminDo(survivor, "GET", app+"/history?page_size=50", "")
	var seen []string
	for _, it := range hist["items"].([]any) {
		m := it.(map[string]any)
		if k, _ := m["kind"].(string); k != "" && k != "wake" {
			seen = append(seen, k+" by "+m["by"].(string))
		}
	}
	slices.Reverse(seen)
	if want := []string{"hold by ops", "release by ops", "sleep by alice"}; !slices.Equal(seen, want) {
		t.Errorf("the operator's actions in the history: %q, want %q", seen, want)
	}
}

// scrape reads node n's /metrics into series → value.
func (e *clusterEnv) scrape(n *clusterNode) map[string]float64 {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.adminURL(n, "/metrics"), nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("scrape %s: %v %v", n.id, resp, err)
	}
	defer resp.Body.Close()
	return parseExposition(e.t, resp.Body)
}

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Groups in a 3-node cluster. The process driver is refused in a cluster (its
// apps run on one machine, which the other nodes cannot see): the members are
// apps of the fake Clever Cloud, which counts every start and stop the nodes
// send, whichever node sends it.

// groupMembers is the status of each member of the group, by app name, as node
// n's admin API gives it (GET /api/groups/{id}); nil when it cannot be read.
func (e *clusterEnv) groupMembers(n *clusterNode, group string) map[string]string {
	req, _ := http.NewRequest("GET", e.adminURL(n, "/api/groups/"+group), nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct {
		Members []struct {
			AppID  string `json:"app_id"`
			Status string `json:"status"`
		} `json:"members"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil
	}
	names := map[string]string{}
	for name, id := range e.ids {
		names[id] = name
	}
	out := map[string]string{}
	for _, m := range v.Members {
		out[names[m.AppID]] = m.Status
	}
	return out
}

// waitGroup waits until every node of nodes gives each of the members the
// status want.
func (e *clusterEnv) waitGroup(nodes []*clusterNode, group string, members []string, want string, limit time.Duration) {
	e.t.Helper()
	var last []string
	if !testwait.Until(limit, func() bool {
		last = last[:0]
		ok := true
		for _, n := range nodes {
			got := e.groupMembers(n, group)
			last = append(last, fmt.Sprintf("%s: %v", n.id, got))
			for _, m := range members {
				ok = ok && got[m] == want
			}
		}
		return ok
	}) {
		e.t.Fatalf("%v not %s on every node after %v; last seen: %v", members, want, limit, last)
	}
}

// wakeAsksBy counts the wake asks in the app's history that by made.
func (e *clusterEnv) wakeAsksBy(n *clusterNode, name, by string) int {
	e.t.Helper()
	code, page := e.adminDo(n, "GET", "/api/apps/"+e.ids[name]+"/history?page_size=100", "")
	items, _ := page["items"].([]any)
	if code != 200 {
		e.t.Fatalf("history of %s on %s: %d %v", name, n.id, code, page)
	}
	count := 0
	for _, it := range items {
		if m, _ := it.(map[string]any); m["kind"] == "wake_ask" && m["by"] == by {
			count++
		}
	}
	return count
}

// A group (a web app with a route, a worker without) woken by a redis_list
// trigger, its leader killed (SIGKILL) around the moment the work lands: at
// once after the RPUSH (the new leader finds the work), or as the leader logs
// that it found the work (mid-wake: the new leader completes it). Either way
// the group is woken once, each member started once at the platform, both up
// on the surviving nodes, each member's history naming the trigger.
func TestGroups_ClusterLeaderKilledAsTheTriggerFiresWakesTheGroupOnce(t *testing.T) {
	t.Run("at the RPUSH", func(t *testing.T) { leaderKilledAsTheTriggerFires(t, false) })
	t.Run("as the leader finds the work", func(t *testing.T) { leaderKilledAsTheTriggerFires(t, true) })
}

const triggerFired = "a wake trigger found work: waking"

func leaderKilledAsTheTriggerFires(t *testing.T, afterFire bool) {
	jobs := redistest.Start(t, redistest.Options{})
	extra := fmt.Sprintf(`groups:
  - {id: shop, apps: ["%%ID:web%%", "%%ID:worker%%"]}
triggers:
  - {id: queue, wake: shop, every: 300ms, redis_list: {addr: %q, key: jobs}}
`, jobs.Addr())
	e := newClusterExtra(t, clusterClever(), 3, extra,
		clusterApp{name: "web", state: fakeclever.StateShouldBeDown},
		clusterApp{name: "worker", state: fakeclever.StateShouldBeDown, noRoute: true})
	members := []string{"web", "worker"}
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitGroup(e.nodes, "shop", members, "Down", 20*time.Second)
	old := e.node(lead.ID)
	survivors := others(e.nodes, old)
	// The leader is polling: the RPUSH lands between two of its looks, or in one.
	testwait.For(t, 15*time.Second, "the leader polling", func() bool { return e.checksOf(old, "queue") >= 2 })

	if _, err := jobs.Do("RPUSH", "jobs", "job-1"); err != nil {
		t.Fatal(err)
	}
	if afterFire {
		old.p.waitLog(func(l map[string]any) bool { return l["msg"] == triggerFired }, 15*time.Second)
	}
	old.p.kill()
	t.Logf("%s killed; starts at the platform by then: web %d, worker %d", old.id, e.fake.Starts(e.ids["web"]), e.fake.Starts(e.ids["worker"]))

	next := e.node(e.waitLeader(survivors, 20*time.Second, old.id).ID)
	e.waitGroup(survivors, "shop", members, "Up", 40*time.Second)
	// The job is still in the list: the new leader keeps finding work, and
	// must not start the group again.
	seen := e.checksOf(next, "queue")
	testwait.For(t, 15*time.Second, "the new leader looking again", func() bool { return e.checksOf(next, "queue") >= seen+3 })
	for _, name := range members {
		e.checkOneStart(name)
		if n := e.apiCalls(name, "DELETE", "/instances"); n != 0 {
			t.Errorf("%s: %d stops at the platform, want none", name, n)
		}
		if st, _ := e.fake.App(e.ids[name]); st.State != fakeclever.StateShouldBeUp {
			t.Errorf("%s at the platform: %s, want %s", name, st.State, fakeclever.StateShouldBeUp)
		}
		if n := e.wakeAsksBy(next, name, "trigger queue"); n < 1 {
			t.Errorf("%s: no wake ask by the trigger in its history", name)
		}
	}
	e.waitAppStatus(survivors, "web", "Up", 10*time.Second)
	for _, n := range e.nodes {
		if fired := logIndex(n.p, func(l map[string]any) bool { return l["msg"] == triggerFired }); fired >= 0 {
			t.Logf("%s found the work (old leader: %s)", n.id, old.id)
		}
	}
}

// A request for one member through a follower's gateway wakes the whole
// group, each member started once; traffic on web alone keeps api up well past
// api's own grace period (and the group's: web's, the longest); once idle, the
// group sleeps, each member stopped once at the platform, Down on every node.
func TestGroups_ClusterARequestOnAFollowerWakesTheGroupTheySleepTogether(t *testing.T) {
	// Graces longer than the nodes' traffic flush (5 s): a follower's requests
	// reach the leader that late.
	const webGrace, apiGrace = 8 * time.Second, 4 * time.Second
	extra := "groups:\n  - {id: shop, apps: [\"%ID:web%\", \"%ID:api%\"]}\n"
	e := newClusterExtra(t, clusterClever(), 3, extra,
		clusterApp{name: "web", state: fakeclever.StateShouldBeDown, grace: webGrace.String()},
		clusterApp{name: "api", state: fakeclever.StateShouldBeDown, grace: apiGrace.String()})
	members := []string{"web", "api"}
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitGroup(e.nodes, "shop", members, "Down", 20*time.Second)
	follower := others(e.nodes, e.node(lead.ID))[0]

	if r := e.get(follower, "web", nil); r.err != nil || r.code != 200 || r.appID != e.ids["web"] {
		t.Fatalf("web through follower %s: %d %q %v", follower.id, r.code, r.body, r.err)
	}
	e.waitGroup(e.nodes, "shop", members, "Up", 40*time.Second)
	for _, name := range members {
		e.checkOneStart(name)
	}

	// Traffic on web alone, through the follower, for more than twice the
	// group's grace period.
	pace := time.NewTicker(300 * time.Millisecond) // a client's pace, not a wait for a condition
	defer pace.Stop()
	for until := time.Now().Add(2*webGrace + 4*time.Second); time.Now().Before(until); <-pace.C {
		if r := e.get(follower, "web", nil); r.err != nil || r.code != 200 {
			t.Fatalf("web through %s: %d %q %v", follower.id, r.code, r.body, r.err)
		}
		if n := e.apiCalls("api", "DELETE", "/instances"); n != 0 {
			t.Fatalf("api stopped at the platform while web had traffic: its group must keep it up")
		}
	}
	if got := e.groupMembers(follower, "shop"); got["api"] != "Up" {
		t.Errorf("after the traffic on web, %s shows the group %v: want api Up", follower.id, got)
	}

	e.waitGroup(e.nodes, "shop", members, "Down", 60*time.Second)
	for _, name := range members {
		e.checkOneStart(name) // asleep, never woken again
		if n := e.apiCalls(name, "DELETE", "/instances"); n != 1 {
			t.Errorf("%s: %d stops at the platform, want 1", name, n)
		}
		if st, _ := e.fake.App(e.ids[name]); st.State != fakeclever.StateShouldBeDown {
			t.Errorf("%s at the platform: %s, want %s", name, st.State, fakeclever.StateShouldBeDown)
		}
	}
}

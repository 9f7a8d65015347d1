package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
	"github.com/reapergw/reaper/trigger"
)

// checksOf is how many looks node n made for the trigger, by its metrics.
func (e *clusterEnv) checksOf(n *clusterNode, id string) float64 {
	m := e.scrape(n)
	var sum float64
	for _, r := range []string{"work", "none", "error"} {
		sum += m[fmt.Sprintf(`reaper_trigger_checks_total{result=%q,trigger=%q}`, r, id)]
	}
	return sum
}

// triggersOf reads GET /api/triggers on node n.
func (e *clusterEnv) triggersOf(n *clusterNode) trigger.Answer {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.adminURL(n, trigger.AdminPath), nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a trigger.Answer
	if resp.StatusCode != 200 || json.Unmarshal(b, &a) != nil {
		e.t.Fatalf("%s %s: %d %s", n.id, trigger.AdminPath, resp.StatusCode, b)
	}
	return a
}

// Only the leader polls a trigger; every node's admin API shows the leader's
// view. Once the leader is killed, the new one polls, and an RPUSH made then
// wakes the app once.
func TestCluster_OnlyTheLeaderPollsATriggerTheNextOneTakesOver(t *testing.T) {
	jobs := redistest.Start(t, redistest.Options{})
	extra := fmt.Sprintf(`triggers:
  - {id: queue, wake: "%%ID:web%%", every: 300ms, redis_list: {addr: %q, key: jobs}}
`, jobs.Addr())
	e := newClusterExtra(t, clusterClever(), 3, extra, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	old := e.node(lead.ID)
	survivors := others(e.nodes, old)

	testwait.For(t, 15*time.Second, "the leader polling", func() bool { return e.checksOf(old, "queue") >= 3 })
	for _, n := range survivors {
		if c := e.checksOf(n, "queue"); c != 0 {
			t.Errorf("follower %s looked %v times: only the leader polls", n.id, c)
		}
		if v := e.triggersOf(n).Triggers; len(v) != 1 || !v[0].Running || v[0].LastCheck == nil {
			t.Errorf("follower %s shows %+v: want the leader's view (running, checked)", n.id, v)
		}
	}

	old.p.kill()
	next := e.node(e.waitLeader(survivors, 15*time.Second, old.id).ID)
	testwait.For(t, 15*time.Second, "the new leader polling", func() bool { return e.checksOf(next, "queue") >= 2 })
	if _, err := jobs.Do("RPUSH", "jobs", "job-1"); err != nil {
		t.Fatal(err)
	}
	e.waitAppStatus(survivors, "web", "Up", 30*time.Second)
	e.checkOneStart("web")
	for _, n := range others(survivors, next) {
		if c := e.checksOf(n, "queue"); c != 0 {
			t.Errorf("follower %s looked %v times after the change of leader", n.id, c)
		}
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/pgtest"
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

// Every node listens for a postgres_notify trigger, not only the leader. With
// the leader killed and a follower frozen (SIGSTOP), the last node has no
// majority and so no leader: a burst of NOTIFYs sent then is heard by it (and
// kept by Postgres for the frozen node's connection), and its wake ask is
// stored. Once the frozen node resumes and a leader is elected, web is
// started exactly once, though both nodes asked.
func TestCluster_ANotifySentWithNoLeaderWakesTheAppOnceALeaderExists(t *testing.T) {
	pg := pgtest.Init(t).Run()
	if err := pgtest.AwaitQuery(context.Background(), pg.Addr); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.URL(pg.Addr)
	extra := fmt.Sprintf(`triggers:
  - {id: jobs-notify, wake: "%%ID:web%%", postgres_notify: {dsn: %q, channel: jobs}}
`, dsn)
	e := newClusterExtra(t, clusterClever(), 3, extra, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	for _, n := range e.nodes {
		testwait.For(t, 20*time.Second, n.id+" listening", func() bool { return e.checksOf(n, "jobs-notify") >= 1 })
	}
	old := e.node(lead.ID)
	rest := others(e.nodes, old)
	frozen, last := rest[0], rest[1]
	if v := e.triggersOf(last).Triggers; len(v) != 1 || len(v[0].Nodes) != 3 {
		t.Fatalf("%s shows %+v: want the trigger with each of the 3 nodes", last.id, v)
	} else {
		for _, nv := range v[0].Nodes {
			if !nv.Listening {
				t.Errorf("%s shows node %+v not listening: every node listens", last.id, nv)
			}
		}
	}

	old.p.kill()
	frozen.p.signal(syscall.SIGSTOP)
	t.Cleanup(func() { _ = frozen.p.cmd.Process.Signal(syscall.SIGCONT) })
	testwait.For(t, 20*time.Second, last.id+" knowing no leader", func() bool {
		st, err := e.status(last)
		return err == nil && st.LeaderID == ""
	})
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := pgExec(ctx, pg.Addr, fmt.Sprintf("NOTIFY jobs, 'job-%d'", i))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	last.p.waitLog(func(l map[string]any) bool { return l["msg"] == triggerFired && l["trigger"] == "jobs-notify" }, 20*time.Second)
	if st, err := e.status(last); err != nil || st.LeaderID != "" {
		t.Fatalf("%s after the NOTIFYs: %+v %v, want still no leader", last.id, st, err)
	}
	if n := e.fake.Starts(e.ids["web"]); n != 0 {
		t.Fatalf("web started %d times with no leader", n)
	}

	frozen.p.signal(syscall.SIGCONT)
	next := e.node(e.waitLeader(rest, 30*time.Second, old.id).ID)
	e.waitAppStatus(rest, "web", "Up", 40*time.Second)
	// The frozen node heard the NOTIFYs too once it resumed (Postgres kept
	// them on its connection), and may have asked as well: web is up, and
	// started once.
	testwait.For(t, 20*time.Second, "the NOTIFYs seen by "+frozen.id, func() bool { return e.notifiesOf(frozen) >= 5 })
	if n := e.notifiesOf(last); n != 5 {
		t.Errorf("%s saw %v NOTIFYs, want 5", last.id, n)
	}
	e.checkOneStart("web")
	n := e.wakeAsksBy(next, "web", "trigger jobs-notify")
	if n < 1 {
		t.Errorf("no wake ask by the trigger in web's history")
	}
	t.Logf("%d wake asks by the trigger in web's history (one per node that found web neither up nor waking)", n)
}

// notifiesOf is how many NOTIFYs node n saw for the jobs-notify trigger, by
// its metrics.
func (e *clusterEnv) notifiesOf(n *clusterNode) float64 {
	return e.scrape(n)[`reaper_trigger_checks_total{result="work",trigger="jobs-notify"}`]
}

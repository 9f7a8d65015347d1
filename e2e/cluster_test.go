package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestCluster_ThreeNodesElectOneLeader(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")

	for _, n := range e.nodes {
		st, err := e.status(n)
		if err != nil {
			t.Fatal(err)
		}
		if st.ID != n.id || st.LeaderID != lead.ID || st.Term != lead.Term {
			t.Errorf("%s says id %s, leader %s, term %d; want %s, %s, %d", n.id, st.ID, st.LeaderID, st.Term, n.id, lead.ID, lead.Term)
		}
		if len(st.Members) != 3 {
			t.Fatalf("%s lists %d members, want 3: %+v", n.id, len(st.Members), st.Members)
		}
		for _, m := range st.Members {
			want := e.node(m.ID)
			if m.RaftAddr != want.raftAddr || m.APIAddr != want.apiAddr || !m.Voter || m.Leader != (m.ID == lead.ID) {
				t.Errorf("%s shows member %+v, want raft %s, api %s, voter, leader=%v", n.id, m, want.raftAddr, want.apiAddr, m.ID == lead.ID)
			}
		}

		out, err := reaperCLI(t, "cluster", "status", "--config", n.p.config)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "node "+n.id+":") || !strings.Contains(out, "leader "+lead.ID) {
			t.Errorf("reaper cluster status on %s does not name the node and the leader %s:\n%s", n.id, lead.ID, out)
		}
		for _, m := range e.nodes {
			if !slices.ContainsFunc(strings.Split(out, "\n"), func(line string) bool {
				// ID RAFT API VOTER LEADER, then the probe's REACH RTT STATE LAST CONTACT.
				f := strings.Fields(line)
				return len(f) >= 9 && f[0] == m.id && f[1] == m.raftAddr && f[2] == m.apiAddr && f[4] == fmt.Sprint(m.id == lead.ID) &&
					f[5] != "unreachable"
			}) {
				t.Errorf("reaper cluster status on %s has no line for member %s (%s, %s):\n%s", n.id, m.id, m.raftAddr, m.apiAddr, out)
			}
		}
	}

	// Internal calls: refused without the cluster's signature, on every node.
	for _, n := range e.nodes {
		if code := internalCall(t, n, "/internal/asks/x", ""); code != http.StatusUnauthorized {
			t.Errorf("%s: unsigned internal call answered %d, want 401", n.id, code)
		}
		if code := internalCall(t, n, "/internal/asks/x", "another-secret-of-32-characters!"); code != http.StatusUnauthorized {
			t.Errorf("%s: internal call signed with another secret answered %d, want 401", n.id, code)
		}
		// Signed with the secret, it gets past the check: the leader takes the
		// ask, a follower says it does not lead.
		want := http.StatusMisdirectedRequest
		if n.id == lead.ID {
			want = http.StatusAccepted
		}
		if code := internalCall(t, n, "/internal/asks/x", e.secret); code != want {
			t.Errorf("%s: signed internal call answered %d, want %d", n.id, code, want)
		}
	}
}

func TestCluster_RequestsHeldOnEveryNodeReleasedByOneStart(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)

	begin := time.Now()
	got := e.expectApp(e.getAll(e.nodes, "web", 1), 3, "web", 30*time.Second)
	e.checkOneStart("web")
	first, last := got[0].at, got[0].at
	for _, r := range got {
		if r.at.Before(first) {
			first = r.at
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	t.Logf("answered %v after the requests; %v between the first and the last answer", first.Sub(begin).Round(time.Millisecond), last.Sub(first).Round(time.Millisecond))
	// The nodes learn of the Up record by notification; their poll (2 s) is only
	// the fallback.
	if spread := last.Sub(first); spread > 2*time.Second {
		t.Errorf("the held requests were released %v apart: a node learned late that the app was up", spread)
	}
}

func TestCluster_LeaderKilledMidWakeNewLeaderCompletesIt(t *testing.T) {
	opts := clusterClever()
	opts.BootTime = 3 * time.Second
	e := newCluster(t, opts, 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	old := e.node(lead.ID)
	survivors := others(e.nodes, old)

	results := e.getAll(survivors[:1], "web", 1)
	testwait.For(t, 10*time.Second, "the platform got the start", func() bool { return e.fake.Starts(e.ids["web"]) == 1 })
	old.p.kill()
	killed := time.Now()

	next := e.waitLeader(survivors, 15*time.Second, old.id)
	t.Logf("new leader %s after %v", next.ID, time.Since(killed).Round(time.Millisecond))
	if next.Term <= lead.Term {
		t.Errorf("new leader's term %d, want more than %d", next.Term, lead.Term)
	}
	e.expectApp(results, 1, "web", 30*time.Second)
	e.node(next.ID).p.waitLog(func(l map[string]any) bool {
		return l["msg"] == "app status changed" && l["app"] == e.ids["web"] && l["to"] == "Up"
	}, 10*time.Second)
	e.waitAppStatus(survivors, "web", "Up", 10*time.Second)
	e.checkOneStart("web")
}

func TestCluster_LeaderKilledHoldingTheAppLockWakeStillCompletes(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown, failTimeout: "30s"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	old := e.node(lead.ID)
	survivors := others(e.nodes, old)

	// The leader's next call about the app takes 3 s: it holds the app's lock
	// meanwhile, and dies with it.
	e.fake.Inject(e.ids["web"], fakeclever.Fault{Kind: fakeclever.FaultSlow, Delay: 3 * time.Second, Count: 1})
	results := e.getAll(survivors[:1], "web", 1)
	// The lock is held by the slow step once the same token stays in it for a
	// while: other steps hold it for milliseconds.
	lockKey := "reaper:lock:" + e.ids["web"]
	var token string
	var since time.Time
	testwait.For(t, 10*time.Second, "the leader holds the app's lock in a slow step", func() bool {
		v, err := e.redis.Do("GET", lockKey)
		if err != nil || v == "" || v != token {
			token, since = v, time.Now()
			return false
		}
		return time.Since(since) > 300*time.Millisecond
	})
	old.p.kill()
	killed := time.Now()
	if v, err := e.redis.Do("GET", lockKey); err != nil || v != token {
		t.Fatalf("the lock was released before the leader died (%q, %v): the test did not play its case", v, err)
	}
	next := e.waitLeader(survivors, 15*time.Second, old.id)
	t.Logf("new leader %s after %v", next.ID, time.Since(killed).Round(time.Millisecond))

	// The held request's fail timeout is 30 s: the new leader must finish the wake
	// within it, although the dead leader's lock is still in the store.
	got := e.expectApp(results, 1, "web", 40*time.Second)
	t.Logf("answered %v after the leader died", got[0].at.Sub(killed).Round(time.Millisecond))
	e.checkOneStart("web")
}

func TestCluster_RedisRestartedMidRunLosesNoAskStartsOnce(t *testing.T) {
	opts := clusterClever()
	opts.BootTime = 2 * time.Second
	down := fakeclever.StateShouldBeDown
	e := newCluster(t, opts, 3,
		clusterApp{name: "before", state: down, failTimeout: "40s"},
		clusterApp{name: "during", state: down, failTimeout: "40s"})
	e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "before", "Down", 15*time.Second)
	e.waitAppStatus(e.nodes, "during", "Down", 15*time.Second)
	warnsBefore := map[string]int{}
	for _, n := range e.nodes {
		warnsBefore[n.id] = warnCount(n.p)
	}

	// Redis goes away just before a burst of requests on every node, and comes
	// back once every node has noticed.
	const perNode = 20
	e.redis.Stop()
	stopped := time.Now()
	before := e.getAll(e.nodes, "before", perNode)
	for _, n := range e.nodes {
		n.p.waitLog(func(l map[string]any) bool {
			at, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"]))
			return l["level"] == "WARN" && at.After(stopped)
		}, 10*time.Second)
	}
	e.redis.Restart()
	t.Logf("redis down for %v", time.Since(stopped).Round(time.Millisecond))
	got := e.expectApp(before, 3*perNode, "before", 45*time.Second)
	last := got[0].at
	for _, r := range got {
		if r.at.After(last) {
			last = r.at
		}
	}
	t.Logf("every request held through the outage answered %v after redis stopped", last.Sub(stopped).Round(time.Millisecond))
	e.checkOneStart("before")

	// Warnings: a few per node for the outage, not one per request.
	for _, n := range e.nodes {
		d := warnCount(n.p) - warnsBefore[n.id]
		t.Logf("%s: %d warnings for the outage", n.id, d)
		if d > 8 {
			t.Errorf("%s logged %d warnings for one outage and %d requests, want a handful:\n%s", n.id, d, perNode, warnLines(n.p))
		}
	}

	// Redis restarted while a wake is under way: the start is sent, the app boots.
	during := e.getAll(e.nodes, "during", 2)
	testwait.For(t, 15*time.Second, "the platform got the start", func() bool { return e.fake.Starts(e.ids["during"]) == 1 })
	restarted := time.Now()
	e.redis.Restart()
	got = e.expectApp(during, 6, "during", 45*time.Second)
	last = got[0].at
	for _, r := range got {
		if r.at.After(last) {
			last = r.at
		}
	}
	t.Logf("every request held through the restart answered %v after it", last.Sub(restarted).Round(time.Millisecond))
	e.checkOneStart("during")
}

func TestCluster_NodeKilledWithRequestsInFlightAppSleepsOnceTheyExpire(t *testing.T) {
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	const grace = 3 * time.Second
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "slow", grace: "3s", handler: slow})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "slow", "Up", 15*time.Second)
	victim := others(e.nodes, e.node(lead.ID))[0]

	// Two requests in flight through a follower, for longer than the grace period.
	sent := time.Now()
	results := e.getAll([]*clusterNode{victim}, "slow", 2)
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the requests did not reach the app")
		}
	}
	// The leader sees them through the store, where the follower flushes its counts.
	testwait.For(t, 10*time.Second, "the leader's view of the app shows 2 requests in flight", func() bool {
		return e.adminInFlight(e.node(lead.ID), "slow") == 2
	})
	// A job pass reads the app's state: GET /v2/summary for several apps, a GET
	// of the app for one.
	summaries := func() int {
		n := 0
		for _, c := range e.fake.Calls() {
			if c.Method == "GET" && (c.Path == "/v2/summary" || strings.HasSuffix(c.Path, "/applications/"+e.ids["slow"])) {
				n++
			}
		}
		return n
	}
	var base int
	testwait.For(t, 20*time.Second, "the grace period over, and three full passes after it", func() bool {
		if time.Since(sent) < grace {
			base = summaries()
			return false
		}
		return summaries() >= base+3
	})
	// The leader may have marked the app WaitingForShutdown before the follower's
	// counts reached the store (they are flushed every 5 s, and at once when a node
	// sees that mark): its check after the settle delay must then put it back Up.
	testwait.For(t, 10*time.Second, "the leader says Up", func() bool { return e.appStatus(e.node(lead.ID), "slow") == "Up" })
	if n := e.apiCalls("slow", "DELETE", "/instances"); n != 0 {
		t.Fatalf("the app was stopped with two requests in flight through a live node")
	}

	victim.p.kill()
	killed := time.Now()
	for range 2 {
		if r := <-results; r.err == nil {
			t.Errorf("a request through the killed node got an answer: %d", r.code)
		}
	}
	// The dead node's counts expire (three flush intervals: 15 s after its last
	// flush), then the leader settles and stops the app.
	testwait.For(t, grace+25*time.Second, "the app put to sleep", func() bool { return e.apiCalls("slow", "DELETE", "/instances") == 1 })
	slept := time.Since(killed)
	t.Logf("stopped %v after the node died", slept.Round(time.Millisecond))
	if slept < 5*time.Second {
		t.Errorf("stopped %v after the node died: its in-flight counts (kept 15 s after its last flush) should have kept the app up longer", slept)
	}
	e.waitAppStatus(others(e.nodes, victim), "slow", "Down", 10*time.Second)
	if n := e.fake.Starts(e.ids["slow"]); n != 0 {
		t.Errorf("%d starts, want none", n)
	}
}

func TestCluster_JoinAndRemoveANode(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	members := func(st leader.Status) []string {
		var ids []string
		for _, m := range st.Members {
			ids = append(ids, m.ID)
		}
		return ids
	}
	initial := slices.Clone(e.nodes)
	followers := others(initial, e.node(lead.ID))

	// n4 lists the members but not itself: it must not bootstrap, only wait.
	n4 := e.newNode("n4")
	e.start(n4, initial)
	if st, err := e.status(n4); err != nil || st.LeaderID != "" || st.State == leader.StateLeader {
		t.Fatalf("n4 before it is added: %+v %v; want no leader known", st, err)
	}

	// Asked through a follower, which forwards to the leader.
	out, err := reaperCLI(t, "cluster", "join", "--config", followers[0].p.config,
		"--id", "n4", "--raft-addr", n4.raftAddr, "--api-addr", n4.apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "n4") {
		t.Errorf("reaper cluster join output does not list n4:\n%s", out)
	}
	all := append(slices.Clone(initial), n4)
	st := e.waitLeader(all, 15*time.Second, "")
	if st.ID != lead.ID {
		t.Errorf("the leader changed from %s to %s when n4 joined", lead.ID, st.ID)
	}
	// n4 knows the leader from its first AppendEntries, which it may refuse (its
	// log is empty) before the leader sends the entries that list the members.
	testwait.For(t, 10*time.Second, "every node to list n1..n4", func() bool {
		for _, n := range all {
			st, err := e.status(n)
			if err != nil || !slices.Equal(members(st), []string{"n1", "n2", "n3", "n4"}) {
				return false
			}
		}
		return true
	})
	for _, n := range all {
		st, err := e.status(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := members(st); !slices.Equal(got, []string{"n1", "n2", "n3", "n4"}) {
			t.Errorf("%s lists members %v after the join, want n1..n4", n.id, got)
		}
		for _, m := range st.Members {
			if m.ID == "n4" && (m.RaftAddr != n4.raftAddr || m.APIAddr != n4.apiAddr || !m.Voter) {
				t.Errorf("%s shows n4 as %+v", n.id, m)
			}
		}
	}

	out, err = reaperCLI(t, "cluster", "remove", "--config", followers[1].p.config, "--id", "n4")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "n4") {
		t.Errorf("reaper cluster remove output still lists n4:\n%s", out)
	}
	testwait.For(t, 10*time.Second, "n4 gone from every member's view", func() bool {
		for _, n := range initial {
			st, err := e.status(n)
			if err != nil || !slices.Equal(members(st), []string{"n1", "n2", "n3"}) {
				return false
			}
		}
		return true
	})
	e.waitLeader(initial, 10*time.Second, "")
}

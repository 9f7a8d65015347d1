package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/leader"
)

// probedStatus is GET /api/cluster on the node's admin listener: each member
// probed, as the dashboard asks for it.
func (e *clusterEnv) probedStatus(n *clusterNode) (leader.Status, error) {
	return e.clusterStatus(n, "/api/cluster")
}

// memberOf is the member id of a status; nil when it is not listed.
func memberOf(st leader.Status, id string) *leader.Member {
	for i := range st.Members {
		if st.Members[i].ID == id {
			return &st.Members[i]
		}
	}
	return nil
}

// A killed member stays a voter in Raft's configuration; /api/cluster, on the
// leader and on the surviving follower, says it is unreachable, why, and when it
// last answered that node, and the dashboard's cluster panel says the same where
// it used to show a healthy follower.
func TestCluster_KilledNodeUnreachableInAPIAndDashboard(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	leaderNode := e.node(lead.ID)
	followers := others(e.nodes, leaderNode)
	dead, live := followers[0], followers[1]
	asked := []*clusterNode{leaderNode, live}
	for _, n := range asked { // each node hears from every member once
		st, err := e.probedStatus(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Members {
			if m.Probe == nil || !m.Probe.Reachable || m.Probe.LastAnswerMS != nil {
				t.Fatalf("before the kill, %s sees %s: %+v; want reachable", n.id, m.ID, m.Probe)
			}
		}
	}
	killed := time.Now()
	dead.p.kill()

	for _, n := range asked {
		st, err := e.probedStatus(n)
		if err != nil {
			t.Fatal(err)
		}
		d := memberOf(st, dead.id)
		if d == nil || !d.Voter || d.Probe == nil {
			t.Fatalf("on %s, the killed member %s: %+v; want a voter, probed", n.id, dead.id, d)
		}
		p := d.Probe
		if p.Reachable || p.Self != nil || !strings.Contains(p.Error, "connection refused") {
			t.Errorf("on %s, the killed member's probe: %+v; want unreachable, connection refused", n.id, p)
		}
		if p.LastAnswerMS == nil || time.Duration(*p.LastAnswerMS)*time.Millisecond > time.Since(killed)+time.Minute {
			t.Errorf("on %s, the killed member's last answer: %v; want the answer before the kill", n.id, p.LastAnswerMS)
		}
		if l := memberOf(st, live.id); l == nil || l.Probe == nil || !l.Probe.Reachable {
			t.Errorf("on %s, the live follower %s: %+v; want reachable", n.id, live.id, l)
		}
	}

	// The dashboard of the live follower, in Chromium.
	b := chrometest.Start(t)
	pg := b.NewPage(t)
	shots := screenshotDir(t)
	t.Cleanup(func() {
		if t.Failed() {
			if png, err := pg.Screenshot(); err == nil {
				_ = os.WriteFile(filepath.Join(shots, "cluster-dead-failed.png"), png, 0o644)
			}
		}
	})
	viewport(t, pg, 1280, 800)
	media(t, pg, "light")
	base := "http://" + live.apiAddr
	navigate(t, pg, base+"/login")
	eval(t, pg, `document.getElementById("token").value = `+jsString(clusterAdminToken)+`;
		document.getElementById("name").value = "ops"; document.querySelector("form").requestSubmit()`)
	pg.WaitFor(t, `location.pathname === "/" && document.querySelectorAll("table.members tbody tr").length === 3`, waitFor)
	row := func(id string) string {
		return evalString(t, pg, `Array.from(document.querySelectorAll("table.members tbody tr")).
			filter(r => r.querySelector("th").textContent.trim().startsWith(`+jsString(id)+`)).
			map(r => r.innerText.replace(/\s+/g, " ")).join("|")`)
	}
	testwait.For(t, waitFor, "the dashboard showing "+dead.id+" unreachable", func() bool {
		return strings.Contains(row(dead.id), "unreachable")
	})
	eval(t, pg, `document.getElementById("r-cluster").scrollIntoView()`)
	shoot(t, pg, shots, "cluster-dead-member")
	d, l := row(dead.id), row(live.id)
	if !strings.Contains(d, "last answered") || !strings.Contains(d, "connection refused") {
		t.Errorf("the dashboard's row of the killed member: %q; want when it last answered, and why it does not", d)
	}
	if strings.Contains(l, "unreachable") || !strings.Contains(l, "yes") {
		t.Errorf("the dashboard's row of this node: %q; want it answering", l)
	}
	t.Logf("rows: %s: %q; %s: %q", dead.id, d, live.id, l)
}

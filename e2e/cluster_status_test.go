package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// A killed node stays a voter (Raft cannot tell a dead member from a slow one),
// and `reaper cluster status` says it does not answer, and why, while the live
// ones answer with their role, round trip and, for a follower, its last contact
// from the leader. Asked on the leader and on the surviving follower alike.
func TestCluster_StatusShowsAKilledNodeUnreachable(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	leaderNode := e.node(lead.ID)
	followers := others(e.nodes, leaderNode)
	dead, live := followers[0], followers[1]
	dead.p.kill()

	// The member's line, as fields: ID RAFT API VOTER LEADER REACH RTT STATE, and
	// LAST CONTACT (one field "-", or two: "35ms ago").
	line := func(out, id string) []string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 9 && f[0] == id {
				return f
			}
		}
		return nil
	}
	for _, asked := range []*clusterNode{leaderNode, live} {
		var out string
		// The leader may step down for a moment while the dead node's heartbeats fail;
		// wait until the node asked names the same leader again.
		testwait.For(t, 15*time.Second, "cluster status on "+asked.id+" to name leader "+lead.ID, func() bool {
			var code int
			out, code = reaperCLIExit(t, "cluster", "status", "--config", asked.p.config)
			if code != 8 { // a member does not answer
				t.Fatalf("cluster status with %s killed exits %d, want 8:\n%s", dead.id, code, out)
			}
			return strings.Contains(out, "leader "+lead.ID+"\n")
		})
		t.Logf("reaper cluster status on %s:\n%s", asked.id, out)
		d, l, ld := line(out, dead.id), line(out, live.id), line(out, lead.ID)
		if d == nil || l == nil || ld == nil {
			t.Fatalf("cluster status on %s lacks a member's line:\n%s", asked.id, out)
		}
		if d[3] != "true" || d[5] != "unreachable" || d[6] != "-" || d[7] != "-" {
			t.Errorf("on %s, the killed node %s: %q; want a voter, unreachable:\n%s", asked.id, dead.id, d, out)
		}
		if !strings.Contains(out, "\n"+dead.id+": ") || !strings.Contains(out, "connection refused") {
			t.Errorf("on %s, no note says why %s is unreachable:\n%s", asked.id, dead.id, out)
		}
		wantReach := map[bool]string{true: "self", false: "ok"}
		if l[5] != wantReach[asked == live] || l[7] != "follower" || len(l) != 10 || l[9] != "ago" {
			t.Errorf("on %s, the live follower %s: %q; want reachable, follower, a last contact:\n%s", asked.id, live.id, l, out)
		}
		if ms, err := time.ParseDuration(l[8]); err != nil || ms > 5*time.Second {
			t.Errorf("on %s, the live follower's last contact %q: want under 5s", asked.id, l[8])
		}
		if ld[4] != "true" || ld[5] != wantReach[asked == leaderNode] || ld[7] != "leader" || ld[8] != "-" {
			t.Errorf("on %s, the leader %s: %q; want reachable, leader, no last contact:\n%s", asked.id, lead.ID, ld, out)
		}
	}
}

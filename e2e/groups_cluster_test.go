package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// A group in a 3-node cluster: a request for web on a follower wakes the
// three members, each started once at the platform; the leader is killed once
// they are up, and the next leader puts them to sleep together, in reverse
// order (worker, api, web).
func TestGroups_InAThreeNodeClusterWithTheLeaderKilled(t *testing.T) {
	down := fakeclever.StateShouldBeDown
	e := newClusterExtra(t, clusterClever(), 3, "groups:\n  - {id: shop, apps: [%ID:web%, %ID:api%, %ID:worker%]}\n",
		clusterApp{name: "web", state: down, grace: "3s"}, clusterApp{name: "api", state: down, grace: "2s"},
		clusterApp{name: "worker", state: down, grace: "2s"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	for _, name := range []string{"web", "api", "worker"} {
		e.waitAppStatus(e.nodes, name, "Down", 15*time.Second)
	}
	old := e.node(lead.ID)
	survivors := others(e.nodes, old)

	e.expectApp(e.getAll(survivors[:1], "web", 1), 1, "web", 30*time.Second)
	for _, name := range []string{"api", "worker"} {
		e.waitAppStatus(survivors, name, "Up", 20*time.Second)
	}
	for _, name := range []string{"web", "api", "worker"} {
		e.checkOneStart(name)
	}

	old.p.kill()
	next := e.waitLeader(survivors, 15*time.Second, old.id)
	t.Logf("new leader %s", next.ID)
	for _, name := range []string{"web", "api", "worker"} {
		e.waitAppStatus(survivors, name, "Down", 40*time.Second)
	}
	var stops []string
	for _, c := range e.fake.Calls() {
		if c.Method == "DELETE" && strings.HasSuffix(c.Path, "/instances") {
			for name, id := range e.ids {
				if c.App == id {
					stops = append(stops, name)
				}
			}
		}
	}
	if !slices.Equal(stops, []string{"worker", "api", "web"}) {
		t.Errorf("stops at the platform %v, want worker, api, web (the reverse of the group's order)", stops)
	}
	for _, name := range []string{"web", "api", "worker"} {
		e.checkOneStart(name)
	}
}

package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// What an operator sees of a dead node (issue 20, item 6): a follower is killed
// (SIGKILL) while another node's GET /api/cluster is polled, as the dashboard's
// cluster panel does; the killed member must show there as unreachable, not as a
// healthy follower, within shownBound of the kill.

// kindOperatorKill kills a follower while /api/cluster is polled.
const kindOperatorKill faultKind = "follower SIGKILL, /api/cluster polled"

// shownBound is how soon after its kill a member must show unreachable: the
// probe's own bound (2 s, for a member that does not answer at all; a killed
// process refuses at once) and the poll's interval, with room for a loaded
// machine.
const shownBound = 5 * time.Second

// pollEvery is how often the operator's view is read while the node is down.
const pollEvery = 100 * time.Millisecond

// clusterView is the part of GET /api/cluster the harness reads.
type clusterView struct {
	Members []struct {
		ID    string `json:"id"`
		Probe *struct {
			Reachable    bool   `json:"reachable"`
			Error        string `json:"error"`
			LastAnswerMS *int64 `json:"last_answer_ms"`
		} `json:"probe"`
	} `json:"members"`
}

// operatorKill kills a follower and polls the leader's /api/cluster until it
// shows the follower unreachable (inj.shown), then starts it again once the
// fault has lasted.
func (in *injector) operatorKill(ctx context.Context, inj *injection) {
	lead := in.leader(ctx)
	if lead < 0 {
		inj.skipped = "no leader known"
		return
	}
	node := (lead + 1 + inj.fault.node%2) % clusterSize
	pollCtx, stop := context.WithCancel(ctx)
	seen := make(chan string, 1)
	go func() { seen <- in.pollUnreachable(pollCtx, lead, node, inj) }()
	in.down(ctx, node, syscall.SIGKILL, inj)
	stop()
	inj.detail = fmt.Sprintf("n%d killed; n%d's /api/cluster %s", node+1, lead+1, <-seen)
}

// pollUnreachable reads node asker's /api/cluster until it shows member down
// unreachable, and sets inj.shown to that moment; it says what it saw.
func (in *injector) pollUnreachable(ctx context.Context, asker, down int, inj *injection) string {
	id := in.w.cluster.Nodes[down].ID
	last := "never answered"
	for polls := 0; ; polls++ {
		var v clusterView
		err := in.w.cluster.AdminGet(ctx, in.w.cluster.Nodes[asker], "/api/cluster", &v)
		now := time.Now()
		switch {
		case err != nil:
			last = "failed: " + err.Error()
		default:
			for _, m := range v.Members {
				if m.ID != id || m.Probe == nil {
					continue
				}
				if !m.Probe.Reachable {
					inj.shown = now // read once the poller has returned (operatorKill)
					ago := "no last answer"
					if m.Probe.LastAnswerMS != nil {
						ago = fmt.Sprintf("last answer %dms before", *m.Probe.LastAnswerMS)
					}
					return fmt.Sprintf("showed it unreachable at the %d-th poll (%s; %s)", polls+1, m.Probe.Error, ago)
				}
				last = "showed it reachable"
			}
		}
		if !sleepUntil(ctx, now.Add(pollEvery)) {
			return "never showed it unreachable while it was down (last poll: " + last + ")"
		}
	}
}

// checkDeadNodeShown: every follower killed while /api/cluster was polled was
// shown unreachable there within shownBound of its kill.
func checkDeadNodeShown(o *observation, c *checkResult) {
	for _, inj := range o.injections {
		if inj.fault.kind != kindOperatorKill || inj.skipped != "" || inj.node < 0 {
			continue
		}
		c.checked++
		switch {
		case inj.shown.IsZero():
			c.violate("n%d killed at %s: %s", inj.node+1, o.at(inj.at), inj.detail)
		case inj.shown.Sub(inj.at) > shownBound:
			c.violate("n%d killed at %s, shown unreachable only at %s (bound %s): %s", inj.node+1, o.at(inj.at), o.at(inj.shown), shownBound, inj.detail)
		}
	}
}

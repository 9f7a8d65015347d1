package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A Raft configuration lists its members whether they run or not: a killed node
// stays a voter until it is removed. So that an operator sees which members
// answer, the cluster's status can be probed: the node asked calls every other
// member's internal API (GET /internal/self, signed, over the cluster's TLS when
// it has some, so the same path the nodes use between them) and reports, for
// each, whether it answered, how long the call took, and what the member says of
// itself, a follower's last contact from the leader included. hashicorp/raft
// keeps the leader's own view of each follower (its replication's last contact)
// private; a follower's LastContact, asked of the follower, says the same.

// ProbeTimeout bounds the probe of each member.
const ProbeTimeout = 2 * time.Second

// Self is what a node says of itself when probed.
type Self struct {
	ID       string `json:"id"`
	State    State  `json:"state"`
	Term     uint64 `json:"term"`
	LeaderID string `json:"leader_id"` // "" when no leader is known
	// LastContactMS is how long ago, in milliseconds, a leader last contacted
	// this node; only on a follower or a candidate, absent when none ever did.
	LastContactMS *int64 `json:"last_contact_ms,omitempty"`
}

// Probe is how a member answered the probe of the node that was asked.
type Probe struct {
	// Reachable is true when the member answered (this node always is).
	Reachable bool `json:"reachable"`
	// RTTMS is how long the call took, in milliseconds; 0 for this node.
	RTTMS float64 `json:"rtt_ms"`
	// Error says why the member is unreachable, or what its answer was when it
	// was not its view (another cluster secret: 401).
	Error string `json:"error,omitempty"`
	// Self is what the member says of itself; nil when it did not say.
	Self *Self `json:"self,omitempty"`
	// LastAnswerMS is, for a member that is unreachable now, how long ago, in
	// milliseconds, it last answered an internal call of this node (a probe, a
	// forwarded wake ask, a count of held requests); absent when it never did
	// since this node started.
	LastAnswerMS *int64 `json:"last_answer_ms,omitempty"`
}

// Self returns this node's own view: its role, term, leader and, unless it
// leads, how long ago a leader last contacted it. Non-blocking.
func (n *Node) Self() Self {
	_, lid := n.raft.LeaderWithID()
	s := Self{ID: n.cfg.NodeID, State: stateOf(n.raft.State()), Term: n.raft.CurrentTerm(), LeaderID: string(lid)}
	if s.State == StateShutdown {
		s.LeaderID = ""
	}
	if s.State == StateFollower || s.State == StateCandidate {
		if last := n.raft.LastContact(); !last.IsZero() {
			ms := time.Since(last).Milliseconds()
			s.LastContactMS = &ms
		}
	}
	return s
}

// ProbeStatus is Status with every member probed at once: each member's Probe
// is set. It blocks for up to ProbeTimeout (less when ctx ends first), however
// many members do not answer.
func (n *Node) ProbeStatus(ctx context.Context) Status {
	st := n.Status()
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i := range st.Members {
		m := &st.Members[i]
		switch {
		case m.ID == st.ID:
			self := n.Self()
			m.Probe = &Probe{Reachable: true, Self: &self}
		case m.APIAddr == "":
			m.Probe = &Probe{Error: "its API address is not known (api_addr)"}
		default:
			wg.Go(func() { m.Probe = n.probe(ctx, raft.ServerID(m.ID), m.APIAddr) })
		}
	}
	wg.Wait()
	return st
}

// probe asks the member id at apiAddr for its view.
func (n *Node) probe(ctx context.Context, id raft.ServerID, apiAddr string) *Probe {
	begin := time.Now()
	code, body, err := n.Call(ctx, string(id), apiAddr, http.MethodGet, "/internal/self", nil)
	p := &Probe{RTTMS: float64(time.Since(begin).Microseconds()) / 1000}
	if err != nil {
		p.RTTMS = 0
		if t, ok := n.caller.answered.Load(apiAddr); ok {
			ms := time.Since(t.(time.Time)).Milliseconds()
			p.LastAnswerMS = &ms
		}
		if ctx.Err() != nil {
			p.Error = fmt.Sprintf("no answer within %v", ProbeTimeout)
		} else if ue := (*url.Error)(nil); errors.As(err, &ue) {
			p.Error = ue.Err.Error() // the cause, without the URL the caller knows
		} else {
			p.Error = err.Error()
		}
		return p
	}
	p.Reachable = true
	var self Self
	if code != http.StatusOK || json.Unmarshal(body, &self) != nil {
		p.Error = fmt.Sprintf("answered %d %s", code, trimBody(body))
		return p
	}
	if self.ID != string(id) {
		p.Error = fmt.Sprintf("the node at %s says it is %q", apiAddr, self.ID)
	}
	p.Self = &self
	return p
}

// trimBody is the start of an answer, for an error message.
func trimBody(b []byte) string {
	const limit = 200
	if len(b) > limit {
		b = b[:limit]
	}
	return string(b)
}

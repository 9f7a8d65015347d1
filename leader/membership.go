package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/raft"
)

// State is a node's Raft role.
type State string

const (
	StateFollower  State = "follower"
	StateCandidate State = "candidate"
	StateLeader    State = "leader"
	StateShutdown  State = "shutdown"
)

func stateOf(s raft.RaftState) State {
	switch s {
	case raft.Leader:
		return StateLeader
	case raft.Candidate:
		return StateCandidate
	case raft.Shutdown:
		return StateShutdown
	default:
		return StateFollower
	}
}

// Member is one server of the current Raft configuration.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"` // "" when not known
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
	// Probe is how the member answered when the status was probed
	// (ProbeStatus); nil otherwise.
	Probe *Probe `json:"probe,omitempty"`
}

// Status is a snapshot of this node's view of the cluster.
type Status struct {
	ID       string   `json:"id"`
	State    State    `json:"state"`
	Term     uint64   `json:"term"`
	LeaderID string   `json:"leader_id"` // "" when no leader is known
	Members  []Member `json:"members"`   // sorted by ID; the latest configuration, possibly not yet committed
}

// IsLeader reports whether this node is the Raft leader right now. Cheap, no I/O; a leader cut off from
// its peers keeps answering true until its lease runs out (use VerifyLeader to be sure).
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Term returns this node's current Raft term. Non-blocking.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// Leader returns the current leader as this node knows it: its id and the API address of its admin
// listener. ok is false while no leader is known (during an election, or after Shutdown). apiAddr is ""
// when the leader's API address is not known yet. Non-blocking.
func (n *Node) Leader() (id, apiAddr string, ok bool) {
	if n.raft.State() == raft.Shutdown {
		return "", "", false
	}
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", "", false
	}
	return string(lid), n.dir.lookup(string(lid)), true
}

// Status returns this node's view: id, role, term, leader and the members of the latest configuration with
// their API addresses. Non-blocking.
func (n *Node) Status() Status {
	_, lid := n.raft.LeaderWithID()
	st := Status{ID: n.cfg.NodeID, State: stateOf(n.raft.State()), Term: n.raft.CurrentTerm(), LeaderID: string(lid)}
	if st.State == StateShutdown {
		st.LeaderID = ""
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return st
	}
	for _, s := range f.Configuration().Servers {
		st.Members = append(st.Members, Member{
			ID:       string(s.ID),
			RaftAddr: string(s.Address),
			APIAddr:  n.dir.lookup(string(s.ID)),
			Voter:    s.Suffrage == raft.Voter,
			Leader:   st.LeaderID != "" && string(s.ID) == st.LeaderID,
		})
	}
	slices.SortFunc(st.Members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return st
}

// VerifyLeader asks a quorum to confirm that this node is still the leader. It blocks for about one round
// trip to the peers; when they do not answer, until the leader's lease runs out and it steps down, or until
// ctx ends. It returns nil when confirmed; otherwise an error wrapping ErrNotLeader (and ctx.Err() or
// ErrShutdown when that is the cause).
func (n *Node) VerifyLeader(ctx context.Context) error {
	if !n.IsLeader() {
		if n.raft.State() == raft.Shutdown {
			return fmt.Errorf("%w: %w", ErrNotLeader, ErrShutdown)
		}
		return ErrNotLeader
	}
	err := waitFuture(ctx, n.raft.VerifyLeader())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotLeader):
		return err
	default:
		return fmt.Errorf("%w: not confirmed by a quorum: %w", ErrNotLeader, err)
	}
}

// AddVoter adds p as a voting member, or updates its addresses when already a member. Leader only. It first
// replicates p's API address, so every node knows it by the time p is a member, then the membership change;
// it blocks until both have committed or ctx ends. If ctx ends first the change may still happen: calling
// AddVoter again with the same peer is safe. Errors: ErrNotLeader on a follower or when leadership is lost
// meanwhile, ErrShutdown, ErrConfig for an invalid peer, ctx.Err(), or a Raft error.
func (n *Node) AddVoter(ctx context.Context, p Peer) error {
	switch {
	case p.ID == "" || p.RaftAddr == "":
		return fmt.Errorf("%w: peer needs an ID and a RaftAddr", ErrConfig)
	case len(p.ID) > maxIDLen || len(p.RaftAddr) > maxAddrLen || len(p.APIAddr) > maxAddrLen:
		return fmt.Errorf("%w: peer id or address too long", ErrConfig)
	}
	if err := n.leaderOnly(); err != nil {
		return err
	}
	if p.APIAddr != "" {
		if err := n.apply(ctx, command{Op: opSetAPIAddr, ID: p.ID, APIAddr: p.APIAddr}); err != nil {
			return fmt.Errorf("leader: add %s: record api address: %w", p.ID, err)
		}
	}
	if err := waitFuture(ctx, n.raft.AddVoter(raft.ServerID(p.ID), raft.ServerAddress(p.RaftAddr), 0, opTimeout(ctx))); err != nil {
		return fmt.Errorf("leader: add %s: %w", p.ID, err)
	}
	n.log.Info("leader: added voter", "peer_id", p.ID, "raft_addr", p.RaftAddr, "api_addr", p.APIAddr)
	return nil
}

// RemoveServer removes the member id from the cluster. Leader only; removing this node itself makes it
// step down once the change commits, and the others elect a new leader. It blocks until the change has
// committed or ctx ends; removing an id that is not a member succeeds. Errors: ErrNotLeader, ErrShutdown,
// ctx.Err(), or a Raft error.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if err := n.leaderOnly(); err != nil {
		return err
	}
	self := id == n.cfg.NodeID
	if self {
		// After removing itself this node is no longer leader and could not clean up the entry.
		if err := n.apply(ctx, command{Op: opDeleteAPIAddr, ID: id}); err != nil {
			return fmt.Errorf("leader: remove %s: %w", id, err)
		}
	}
	if err := waitFuture(ctx, n.raft.RemoveServer(raft.ServerID(id), 0, opTimeout(ctx))); err != nil {
		return fmt.Errorf("leader: remove %s: %w", id, err)
	}
	n.log.Info("leader: removed server", "peer_id", id)
	if !self {
		// Best effort: a stale entry for a non-member is never shown, and AddVoter overwrites it.
		if err := n.apply(ctx, command{Op: opDeleteAPIAddr, ID: id}); err != nil {
			n.log.Warn("leader: could not forget the api address of a removed server", "peer_id", id, "error", err)
		}
	}
	return nil
}

func (n *Node) leaderOnly() error {
	switch n.raft.State() {
	case raft.Leader:
		return nil
	case raft.Shutdown:
		return ErrShutdown
	default:
		return ErrNotLeader
	}
}

// apply replicates c and waits for it to be applied here (the leader), or for ctx to end.
func (n *Node) apply(ctx context.Context, c command) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("leader: encode command: %w", err)
	}
	f := n.raft.Apply(b, opTimeout(ctx))
	if err := waitFuture(ctx, f); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

// reconcile runs on a new leader: it writes into the log the API addresses that its seeds (Config.Peers)
// know for members the log has none for, and its own current one, so that nodes started without those
// seeds (a node added later) learn them. It stops at the first failure; the next leader tries again.
func (n *Node) reconcile(ctx context.Context) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	for _, s := range f.Configuration().Servers {
		id := string(s.ID)
		seed := n.dir.seeds[id]
		if seed == "" {
			continue
		}
		logged, ok := n.dir.loggedAddr(id)
		if ok && (logged == seed || id != n.cfg.NodeID) {
			continue
		}
		if err := n.apply(ctx, command{Op: opSetAPIAddr, ID: id, APIAddr: seed}); err != nil {
			// Losing leadership or shutting down meanwhile is normal; the next leader does this again.
			if ctx.Err() == nil && !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrShutdown) {
				n.log.Warn("leader: could not record api address", "peer_id", id, "error", err)
			}
			return
		}
	}
}

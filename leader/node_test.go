package leader

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// electionBound is how long a test waits for an election. The aim is ~2 s on a LAN; the bound leaves room
// for a loaded machine running the race detector.
const electionBound = 10 * time.Second

func TestCluster_ElectsOneLeader(t *testing.T) {
	c := newCluster(t, 3)
	ids := c.ids()
	leader, term := c.waitAgreement(electionBound, ids...)

	leaders := 0
	for _, id := range ids {
		if c.nodes[id].node.IsLeader() {
			leaders++
		}
		gotID, gotAPI, ok := c.nodes[id].node.Leader()
		if !ok || gotID != leader.cfg.NodeID || gotAPI != c.apiAddr(leader.cfg.NodeID) {
			t.Errorf("%s: Leader() = %q, %q, %v; want %q, %q", id, gotID, gotAPI, ok, leader.cfg.NodeID, c.apiAddr(leader.cfg.NodeID))
		}
	}
	if leaders != 1 {
		t.Fatalf("%d nodes say they are leader, want 1", leaders)
	}

	testwait.For(t, electionBound, "whileLeader on the leader", func() bool { return leader.rec.callFor(term) != nil })
	for _, id := range ids {
		tn := c.nodes[id]
		if tn.rec.overlap.Load() {
			t.Errorf("%s: whileLeader ran twice at once", id)
		}
		if tn != leader && len(tn.rec.all()) != 0 {
			t.Errorf("%s: whileLeader ran on a follower: %d calls", id, len(tn.rec.all()))
		}
	}
	if calls := leader.rec.all(); len(calls) != 1 || calls[0].term != term {
		t.Errorf("leader's whileLeader calls = %d, want 1 call with term %d", len(calls), term)
	}

	st := leader.node.Status()
	if st.State != StateLeader || st.Term != term || st.LeaderID != leader.cfg.NodeID || len(st.Members) != 3 {
		t.Fatalf("leader Status = %+v", st)
	}
	for _, m := range st.Members {
		if m.APIAddr != c.apiAddr(m.ID) || !m.Voter || m.Leader != (m.ID == leader.cfg.NodeID) {
			t.Errorf("member %+v: want APIAddr %q, voter, leader=%v", m, c.apiAddr(m.ID), m.ID == leader.cfg.NodeID)
		}
	}

	// Run returns once its ctx ends and whileLeader has returned.
	call := leader.rec.callFor(term)
	leader.stopRun()
	select {
	case <-leader.runDone:
	case <-time.After(electionBound):
		t.Fatal("Run did not return after its context ended")
	}
	select {
	case <-call.returned:
	default:
		t.Fatal("Run returned before whileLeader did")
	}
}

func TestCluster_LeaderFailover(t *testing.T) {
	c := newCluster(t, 3)
	old, oldTerm := c.waitAgreement(electionBound, c.ids()...)
	testwait.For(t, electionBound, "whileLeader on the first leader", func() bool { return old.rec.callFor(oldTerm) != nil })
	oldCall := old.rec.callFor(oldTerm)

	killed := time.Now()
	c.stop(old.cfg.NodeID)
	select {
	case <-oldCall.ctx.Done():
	default:
		t.Fatal("the old leader's whileLeader context is not cancelled after Shutdown")
	}

	next, nextTerm := c.waitAgreement(electionBound, c.ids()...)
	t.Logf("new leader %s at term %d, %s after the old one died", next.cfg.NodeID, nextTerm, time.Since(killed).Round(time.Millisecond))
	if next.cfg.NodeID == old.cfg.NodeID || nextTerm <= oldTerm {
		t.Fatalf("new leader %s at term %d; old was %s at term %d", next.cfg.NodeID, nextTerm, old.cfg.NodeID, oldTerm)
	}
	testwait.For(t, electionBound, "whileLeader on the new leader", func() bool { return next.rec.callFor(nextTerm) != nil })
	for _, id := range c.ids() {
		tn := c.nodes[id]
		if tn.rec.overlap.Load() {
			t.Errorf("%s: whileLeader ran twice at once", id)
		}
		if tn != next && len(tn.rec.all()) != 0 {
			t.Errorf("%s never led but whileLeader ran %d times", id, len(tn.rec.all()))
		}
	}
	if id, api, ok := c.nodes[c.ids()[0]].node.Leader(); !ok || id != next.cfg.NodeID || api != c.apiAddr(id) {
		t.Errorf("Leader() = %q, %q, %v after failover", id, api, ok)
	}
}

func TestCluster_VerifyLeaderFailsWhenCutOff(t *testing.T) {
	c := newCluster(t, 3)
	leader, term := c.waitAgreement(electionBound, c.ids()...)
	// whileLeader runs once the leader's barrier has committed, which needs the followers: wait for it first.
	testwait.For(t, electionBound, "whileLeader on the leader", func() bool { return leader.rec.callFor(term) != nil })
	ctx, cancel := context.WithTimeout(context.Background(), electionBound)
	defer cancel()
	if err := leader.node.VerifyLeader(ctx); err != nil {
		t.Fatalf("VerifyLeader on a healthy leader: %v", err)
	}
	for _, id := range c.ids() {
		if id != leader.cfg.NodeID {
			if err := c.nodes[id].node.VerifyLeader(ctx); !errors.Is(err, ErrNotLeader) {
				t.Errorf("VerifyLeader on follower %s = %v, want ErrNotLeader", id, err)
			}
			c.stop(id)
		}
	}

	// Acknowledgements already in flight when the followers stopped may still confirm one call: poll until
	// a call fails, within the bound.
	start := time.Now()
	var err error
	testwait.For(t, electionBound, "VerifyLeader to fail on the cut-off leader", func() bool {
		err = leader.node.VerifyLeader(ctx)
		return err != nil
	})
	if !errors.Is(err, ErrNotLeader) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("VerifyLeader on a cut-off leader = %v, want ErrNotLeader before the deadline", err)
	}
	t.Logf("VerifyLeader failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if leader.node.IsLeader() {
		t.Error("the cut-off leader still says it is leader")
	}
	select {
	case <-leader.rec.callFor(term).ctx.Done():
	case <-time.After(electionBound):
		t.Fatal("whileLeader context not cancelled after the cut-off leader stepped down")
	}
}

func TestCluster_WrongSecretCannotVote(t *testing.T) {
	c := newCluster(t, 3)
	ids := c.ids()
	leader, term := c.waitAgreement(electionBound, ids...)

	// The stranger lists the same peers plus itself, so it bootstraps a four-member configuration and keeps
	// campaigning; only the secret differs.
	ln := listen(t)
	peers := append(append([]Peer(nil), c.peers...), Peer{ID: "n4", RaftAddr: ln.Addr().String(), APIAddr: "127.0.0.1:19004"})
	stranger := c.start(c.config("n4", peers, strangerSecret), ln)

	refusals := func() int {
		n := 0
		for _, id := range ids {
			n += c.nodes[id].logs.Lines("refused raft connection")
		}
		return n
	}
	testwait.For(t, 4*electionBound, "the members to refuse the stranger repeatedly", func() bool {
		if stranger.node.IsLeader() {
			t.Fatal("the stranger became leader")
		}
		return refusals() >= 6
	})

	if got, gotTerm := c.waitAgreement(electionBound, ids...); got != leader || gotTerm != term {
		t.Errorf("leader %s term %d after the stranger tried, want %s term %d", got.cfg.NodeID, gotTerm, leader.cfg.NodeID, term)
	}
	if stranger.node.IsLeader() || len(stranger.rec.all()) != 0 {
		t.Error("the stranger led")
	}
	if _, _, ok := stranger.node.Leader(); ok {
		t.Error("the stranger found a leader")
	}
	for _, m := range leader.node.Status().Members {
		if m.ID == "n4" {
			t.Error("the stranger is a member")
		}
	}
	logged := false
	for _, tn := range c.all {
		logs := tn.logs.String()
		if strings.Contains(logs, string(testSecret)) || strings.Contains(logs, string(strangerSecret)) {
			t.Errorf("%s logged a secret", tn.cfg.NodeID)
		}
		if tn == stranger {
			continue
		}
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "refused raft connection") && tn == leader && !logged {
				t.Logf("a refusal on the leader: %s", line)
				logged = true
			}
			if strings.Contains(line, "refused raft connection") &&
				(!strings.Contains(line, "remote_addr=127.0.0.1:") || !strings.Contains(line, "claimed_id=n4")) {
				t.Errorf("%s: refusal line without the stranger's address and claimed id: %s", tn.cfg.NodeID, line)
			}
		}
	}
}

func TestCluster_RestartRejoinsWithoutBootstrap(t *testing.T) {
	c := newCluster(t, 3)
	leader, _ := c.waitAgreement(electionBound, c.ids()...)
	var follower *testNode
	for _, id := range c.ids() {
		if c.nodes[id] != leader {
			follower = c.nodes[id]
			break
		}
	}
	if n := follower.logs.Lines("bootstrapping cluster"); n != 1 {
		t.Fatalf("first start bootstrapped %d times, want 1", n)
	}
	id := follower.cfg.NodeID
	// Snapshot the follower once it holds the API addresses the leader logged, so that the restart also
	// restores the directory from a snapshot.
	testwait.For(t, electionBound, "the logged API addresses on the follower", func() bool {
		for _, p := range c.peers {
			if got, ok := follower.node.dir.loggedAddr(p.ID); !ok || got != p.APIAddr {
				return false
			}
		}
		return true
	})
	if err := follower.node.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	c.stop(id)

	cfg := follower.cfg
	cfg.RaftListen = follower.node.cfg.Advertise
	restarted := c.start(cfg, nil)
	if n := restarted.logs.Lines("bootstrapping cluster"); n != 0 {
		t.Errorf("restart bootstrapped again (%d times)", n)
	}
	if n := restarted.logs.Lines("existing raft state found"); n != 1 {
		t.Errorf("restart did not report existing state")
	}
	// New restored the snapshot before returning.
	for _, p := range c.peers {
		if got, ok := restarted.node.dir.loggedAddr(p.ID); !ok || got != p.APIAddr {
			t.Errorf("after restart, logged api address of %s = %q, %v; want %q from the snapshot", p.ID, got, ok, p.APIAddr)
		}
	}

	// It rejoins: it follows the leader, and entries written now reach it.
	newLeader, _ := c.waitAgreement(electionBound, c.ids()...)
	ctx, cancel := context.WithTimeout(context.Background(), electionBound)
	defer cancel()
	if err := newLeader.node.AddVoter(ctx, Peer{ID: id, RaftAddr: cfg.RaftListen, APIAddr: "127.0.0.1:29999"}); err != nil {
		t.Fatalf("AddVoter (address update) after restart: %v", err)
	}
	testwait.For(t, electionBound, "the restarted node to apply the leader's log", func() bool {
		return restarted.node.raft.AppliedIndex() >= newLeader.node.raft.AppliedIndex()
	})
	if _, api, _ := restarted.node.Leader(); api != c.apiAddr(newLeader.cfg.NodeID) {
		t.Errorf("restarted node sees leader api %q, want %q", api, c.apiAddr(newLeader.cfg.NodeID))
	}
	for _, m := range restarted.node.Status().Members {
		if m.ID == id && m.APIAddr != "127.0.0.1:29999" {
			t.Errorf("restarted node's own api address = %q, want the updated one", m.APIAddr)
		}
	}
}

func TestCluster_AddVoterThenRemoveServer(t *testing.T) {
	c := newCluster(t, 3)
	leader, _ := c.waitAgreement(electionBound, c.ids()...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*electionBound)
	defer cancel()

	// The fourth node knows no peers at all: it must learn every API address from the log.
	ln := listen(t)
	p4 := Peer{ID: "n4", RaftAddr: ln.Addr().String(), APIAddr: "127.0.0.1:19004"}
	cfg := c.config("n4", nil, testSecret)
	cfg.Advertise = p4.RaftAddr
	n4 := c.start(cfg, ln)
	if n := n4.logs.Lines("bootstrapping cluster"); n != 0 {
		t.Fatal("a node outside the initial peers bootstrapped")
	}
	for _, id := range c.ids() {
		if tn := c.nodes[id]; tn != leader && tn != n4 {
			if err := tn.node.AddVoter(ctx, p4); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("AddVoter on follower %s = %v, want ErrNotLeader", id, err)
			}
		}
	}
	if err := leader.node.AddVoter(ctx, p4); err != nil {
		t.Fatalf("AddVoter: %v", err)
	}
	want := map[string]string{"n4": p4.APIAddr}
	for _, p := range c.peers {
		want[p.ID] = p.APIAddr
	}
	c.waitMembers(want)
	lid, _ := c.waitAgreement(electionBound, c.ids()...)
	if _, api, ok := n4.node.Leader(); !ok || api != c.apiAddr(lid.cfg.NodeID) {
		t.Errorf("n4 sees leader api %q, want %q", api, c.apiAddr(lid.cfg.NodeID))
	}

	// Remove one of the original followers.
	var gone string
	for _, id := range c.ids() {
		if id != lid.cfg.NodeID && id != "n4" {
			gone = id
			break
		}
	}
	if err := lid.node.RemoveServer(ctx, gone); err != nil {
		t.Fatalf("RemoveServer(%s): %v", gone, err)
	}
	c.stop(gone)
	delete(want, gone)
	c.waitMembers(want)
	c.waitAgreement(electionBound, c.ids()...)
}

// waitMembers waits until every running node lists exactly the members of want with those API addresses.
func (c *cluster) waitMembers(want map[string]string) {
	c.t.Helper()
	testwait.For(c.t, electionBound, "membership on every node", func() bool {
		for _, id := range c.ids() {
			members := c.nodes[id].node.Status().Members
			if len(members) != len(want) {
				return false
			}
			for _, m := range members {
				if api, ok := want[m.ID]; !ok || m.APIAddr != api || !m.Voter {
					return false
				}
			}
		}
		return true
	})
}

func TestSingleNode_ElectsItself(t *testing.T) {
	c := newCluster(t, 1)
	start := time.Now()
	tn, term := c.waitAgreement(electionBound, "n1")
	testwait.For(t, electionBound, "whileLeader", func() bool { return tn.rec.callFor(term) != nil })
	t.Logf("single node led after %s", time.Since(start).Round(time.Millisecond))
	if st := tn.node.Status(); st.State != StateLeader || len(st.Members) != 1 || st.Members[0].APIAddr != c.apiAddr("n1") {
		t.Fatalf("Status = %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), electionBound)
	defer cancel()
	if err := tn.node.VerifyLeader(ctx); err != nil {
		t.Fatalf("VerifyLeader: %v", err)
	}
}

func TestNode_ShutdownIsIdempotentAndFinal(t *testing.T) {
	c := newCluster(t, 1)
	tn, _ := c.waitAgreement(electionBound, "n1")
	if err := tn.node.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := tn.node.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if tn.node.IsLeader() {
		t.Error("IsLeader after Shutdown")
	}
	if _, _, ok := tn.node.Leader(); ok {
		t.Error("Leader() ok after Shutdown")
	}
	if st := tn.node.Status(); st.State != StateShutdown {
		t.Errorf("State = %s", st.State)
	}
	ctx := context.Background()
	if err := tn.node.AddVoter(ctx, Peer{ID: "x", RaftAddr: "127.0.0.1:1"}); !errors.Is(err, ErrShutdown) {
		t.Errorf("AddVoter after Shutdown = %v", err)
	}
	if err := tn.node.VerifyLeader(ctx); !errors.Is(err, ErrNotLeader) || !errors.Is(err, ErrShutdown) {
		t.Errorf("VerifyLeader after Shutdown = %v", err)
	}
	select {
	case <-tn.runDone:
	case <-time.After(electionBound):
		t.Fatal("Run did not return after Shutdown")
	}
}

func TestNew_RefusesBadConfig(t *testing.T) {
	_, err := New(Config{NodeID: "n1", RaftListen: "127.0.0.1:0", DataDir: t.TempDir()})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "cluster.secret") {
		t.Fatalf("New without a secret = %v, want ErrConfig naming cluster.secret", err)
	}
}

func TestNew_DataDirInUse(t *testing.T) {
	c := newCluster(t, 1)
	cfg := c.nodes["n1"].cfg
	cfg.RaftListen = "127.0.0.1:0"
	cfg.Peers = nil
	cfg.Advertise = "127.0.0.1:1"
	if n, err := New(cfg); err == nil {
		_ = n.Shutdown()
		t.Fatal("a second node opened the same data dir")
	}
}

// A node whose log a peer's leader wrote before its own bootstrap ran (a race of
// the first start) joins through it: the bootstrap it can no longer do is not a
// failure.
func TestBootstrap_AfterAPeerWroteTheLogIsNoFailure(t *testing.T) {
	c := newCluster(t, 1)
	lead, _ := c.waitAgreement(electionBound, c.ids()...)
	if err := lead.node.bootstrap(); err != nil {
		t.Fatalf("a bootstrap on a node with a log: %v, want nil (joined through the peer)", err)
	}
	if !strings.Contains(lead.logs.String(), "joined through it") {
		t.Errorf("the log does not say why the bootstrap was skipped")
	}
}

package leader

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// With a member killed, the probed status still lists it as a voter (Raft does
// not know it is gone) but says it does not answer, and why; the live members
// answer with their own view: the follower's last contact from the leader, and
// the leader as leader. With ?probe=false, /api/cluster is the Raft view alone.
func TestProbeStatus_KilledMemberIsUnreachableLiveOnesSayTheirView(t *testing.T) {
	ac := newAPICluster(t, 3)
	lead, term := ac.waitAgreement(electionBound, ac.ids()...)
	lid := lead.cfg.NodeID
	followers := ac.followers(lead)
	dead, live := followers[0], followers[1]
	ac.stop(dead)
	ac.srvs[dead].Close()

	rec := call(ac.apis[lid].Admin(), "GET", "/api/cluster?probe=true", "", nil, time.Now())
	var st Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 200 || err != nil {
		t.Fatalf("GET /api/cluster?probe=true on the leader: %d %s", rec.Code, rec.Body.String())
	}
	if len(st.Members) != 3 {
		t.Fatalf("the leader lists %d members, want 3 (a killed node stays a member): %+v", len(st.Members), st.Members)
	}
	for _, m := range st.Members {
		p := m.Probe
		if p == nil {
			t.Fatalf("member %s has no probe: %s", m.ID, rec.Body.String())
		}
		switch m.ID {
		case lid:
			if !p.Reachable || p.Error != "" || p.Self == nil || p.Self.State != StateLeader || p.Self.LastContactMS != nil {
				t.Errorf("the leader's own probe: %+v %+v", p, p.Self)
			}
		case live:
			if !p.Reachable || p.Error != "" || p.RTTMS <= 0 || p.RTTMS > float64(ProbeTimeout.Milliseconds()) || p.Self == nil {
				t.Fatalf("the live follower %s: %+v", live, p)
			}
			s := p.Self
			if s.ID != live || s.State != StateFollower || s.LeaderID != lid || s.Term != term || s.LastContactMS == nil || *s.LastContactMS < 0 || *s.LastContactMS > 5000 {
				t.Errorf("the live follower says %+v (last contact %v); want follower of %s at term %d, contacted less than 5 s ago", s, s.LastContactMS, lid, term)
			}
		case dead:
			if p.Reachable || p.Self != nil || !strings.Contains(p.Error, "connection refused") || !m.Voter {
				t.Errorf("the killed follower %s: voter %v, probe %+v; want a voter, unreachable, connection refused", dead, m.Voter, p)
			}
		}
	}

	// The follower's view of the leader: reachable, leading, no last contact.
	ctx, cancel := context.WithTimeout(context.Background(), 2*ProbeTimeout)
	defer cancel()
	begin := time.Now()
	for _, m := range ac.nodes[live].node.ProbeStatus(ctx).Members {
		if m.ID == lid && (m.Probe == nil || !m.Probe.Reachable || m.Probe.Self == nil || m.Probe.Self.State != StateLeader || m.Probe.Self.LastContactMS != nil) {
			t.Errorf("the follower's probe of the leader: %+v", m.Probe)
		}
	}
	if took := time.Since(begin); took > ProbeTimeout+time.Second {
		t.Errorf("ProbeStatus took %v, more than ProbeTimeout %v", took, ProbeTimeout)
	}

	rec = call(ac.apis[lid].Admin(), "GET", "/api/cluster?probe=false", "", nil, time.Now())
	if strings.Contains(rec.Body.String(), `"probe"`) {
		t.Errorf("GET /api/cluster?probe=false probed:\n%s", rec.Body.String())
	}
	rec = call(ac.apis[lid].Admin(), "GET", "/api/cluster", "", nil, time.Now())
	if !strings.Contains(rec.Body.String(), `"probe"`) {
		t.Errorf("GET /api/cluster did not probe:\n%s", rec.Body.String())
	}
}

// A member that answers with another cluster secret is reachable, and its
// refusal is said.
func TestProbeStatus_MemberWithAnotherSecretSaysSo(t *testing.T) {
	ac := newAPICluster(t, 2)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	other := ac.followers(lead)[0]
	ac.nodes[other].node.caller.secret = []byte("another-secret-of-32-characters!")
	ctx, cancel := context.WithTimeout(context.Background(), 2*ProbeTimeout)
	defer cancel()
	for _, m := range ac.nodes[other].node.ProbeStatus(ctx).Members {
		if m.ID == lead.cfg.NodeID && (m.Probe == nil || !m.Probe.Reachable || m.Probe.Self != nil || !strings.HasPrefix(m.Probe.Error, "answered 401 ")) {
			t.Errorf("probe signed with another secret: %+v", m.Probe)
		}
	}
}

// A member that answered before it was killed is unreachable with its last
// answer to this node: the operator sees when it was last heard of, not a
// healthy follower. A member that answers has no last answer (it is now).
func TestProbeStatus_KilledMemberSaysWhenItLastAnswered(t *testing.T) {
	ac := newAPICluster(t, 3)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	followers := ac.followers(lead)
	dead, live := followers[0], followers[1]
	ctx, cancel := context.WithTimeout(context.Background(), 4*ProbeTimeout)
	defer cancel()
	for _, m := range lead.node.ProbeStatus(ctx).Members {
		if m.Probe == nil || !m.Probe.Reachable || m.Probe.LastAnswerMS != nil {
			t.Fatalf("before the kill, member %s: %+v; want reachable, no last answer", m.ID, m.Probe)
		}
	}
	killed := time.Now()
	ac.stop(dead)
	ac.srvs[dead].Close()

	for _, m := range lead.node.ProbeStatus(ctx).Members {
		p := m.Probe
		switch m.ID {
		case dead:
			if p.Reachable || p.LastAnswerMS == nil {
				t.Fatalf("the killed member %s: %+v; want unreachable with its last answer", dead, p)
			}
			if ago := time.Duration(*p.LastAnswerMS) * time.Millisecond; ago < 0 || ago > time.Since(killed)+ProbeTimeout+time.Minute {
				t.Errorf("the killed member last answered %v ago; it answered the probe before the kill", ago)
			}
		case live:
			if !p.Reachable || p.LastAnswerMS != nil {
				t.Errorf("the live member %s: %+v; want reachable, no last answer", live, p)
			}
		}
	}
}

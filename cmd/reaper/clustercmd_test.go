package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/certtest"
	"github.com/reapergw/reaper/leader"
)

// tlsAdmin is an admin listener with cluster.tls, answering GET /api/cluster with a fixed status, and the
// configuration of its node.
type tlsAdmin struct {
	srv    *httptest.Server
	config string // the node's configuration file
}

// newTLSAdmin serves with the node's certificate, for the DNS name n1.cluster.test only; or, when stranger
// is set, with a certificate for the same name from another CA.
func newTLSAdmin(t *testing.T, stranger bool) tlsAdmin {
	t.Helper()
	dir := t.TempDir()
	ca := certtest.NewCA(t, "cluster CA")
	caFile := certtest.Write(t, dir, "ca.crt", ca.PEM)
	certFile, keyFile := ca.Issue(t, "n1", certtest.Options{DNS: []string{"n1.cluster.test"}}).Files(t, dir, "n1")
	loaded, err := leader.LoadTLS(certFile, keyFile, caFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/api/cluster" || r.Header.Get("Authorization") != "Bearer admin-t0ken" {
			http.Error(w, "unexpected call", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(leader.Status{ID: "n1", State: leader.StateLeader, Term: 3, LeaderID: "n1",
			Members: []leader.Member{{ID: "n1", RaftAddr: "n1.cluster.test:7000", APIAddr: "n1.cluster.test:9090", Voter: true, Leader: true}}})
	}))
	srv.TLS = loaded.AdminConfig()
	if stranger {
		other := certtest.NewCA(t, "another CA").Issue(t, "n1", certtest.Options{DNS: []string{"n1.cluster.test"}})
		srv.TLS.Certificates = []tls.Certificate{other.TLS(t)}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// The node listens on every address: the command asks it on 127.0.0.1, and checks the name its peers
	// know it by.
	yaml := fmt.Sprintf(`
node: {id: n1, admin_listen: "0.0.0.0:%[1]s", admin_token: admin-t0ken}
store: {driver: valkey, address: "127.0.0.1:6379"}
paas: {driver: clevercloud, clevercloud: {token: t0ken}}
cluster:
  raft_listen: "0.0.0.0:7000"
  secret: 0123456789abcdef-secret
  peers: [{id: n1, raft_addr: "n1.cluster.test:7000", api_addr: "n1.cluster.test:%[1]s"}]
  tls: {cert: %[2]q, key: %[3]q, ca: %[4]q}
`, port, certFile, keyFile, caFile)
	return tlsAdmin{srv: srv, config: certtest.Write(t, dir, "reaper.yaml", []byte(yaml))}
}

func TestClusterCmd_StatusOverTLSTrustsTheClusterCA(t *testing.T) {
	a := newTLSAdmin(t, false)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"cluster", "status", "--config", a.config}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("cluster status: %v\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "node n1: leader, term 3, leader n1\n") {
		t.Errorf("cluster status printed:\n%s", stdout.String())
	}
}

func TestClusterCmd_RefusesAnAdminListenerOutsideTheClusterCA(t *testing.T) {
	a := newTLSAdmin(t, true)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"cluster", "status", "--config", a.config}, nil, &stdout, &stderr)
	_, port, _ := net.SplitHostPort(a.srv.Listener.Addr().String())
	want := "reaper cluster status: the node at https://127.0.0.1:" + port + " could not be reached: "
	if err != exitCode(1) || !strings.HasPrefix(stderr.String(), want) || !strings.Contains(stderr.String(), "certificate signed by unknown authority") {
		t.Errorf("cluster status against a certificate of another CA: %v\n%s", err, stderr.String())
	}
}

// The probed status says which member does not answer, why and when it last
// answered the node asked, the others'
// round trip, role and last contact, and a member that sees another leader.
func TestPrintStatus_ProbedMembers(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	st := leader.Status{ID: "n1", State: leader.StateLeader, Term: 4, LeaderID: "n1", Members: []leader.Member{
		{ID: "n1", RaftAddr: "10.0.0.1:7000", APIAddr: "10.0.0.1:9090", Voter: true, Leader: true,
			Probe: &leader.Probe{Reachable: true, Self: &leader.Self{ID: "n1", State: leader.StateLeader, Term: 4, LeaderID: "n1"}}},
		{ID: "n2", RaftAddr: "10.0.0.2:7000", APIAddr: "10.0.0.2:9090", Voter: true,
			Probe: &leader.Probe{Reachable: true, RTTMS: 1.25, Self: &leader.Self{ID: "n2", State: leader.StateFollower, Term: 4, LeaderID: "n1", LastContactMS: ms(35)}}},
		{ID: "n3", RaftAddr: "10.0.0.3:7000", APIAddr: "10.0.0.3:9090", Voter: true,
			Probe: &leader.Probe{Error: "dial tcp 10.0.0.3:9090: connect: connection refused", LastAnswerMS: ms(41200)}},
		{ID: "n4", RaftAddr: "10.0.0.4:7000", APIAddr: "10.0.0.4:9090", Voter: true,
			Probe: &leader.Probe{Reachable: true, RTTMS: 3, Self: &leader.Self{ID: "n4", State: leader.StateCandidate, Term: 5, LastContactMS: ms(4200)}}},
	}}
	var b bytes.Buffer
	printStatus(&b, st)
	want := `node n1: leader, term 4, leader n1

ID  RAFT           API            VOTER  LEADER  REACH        RTT    STATE      LAST CONTACT
n1  10.0.0.1:7000  10.0.0.1:9090  true   true    self         -      leader     -
n2  10.0.0.2:7000  10.0.0.2:9090  true   false   ok           1.2ms  follower   35ms ago
n3  10.0.0.3:7000  10.0.0.3:9090  true   false   unreachable  -      -          -
n4  10.0.0.4:7000  10.0.0.4:9090  true   false   ok           3.0ms  candidate  4.2s ago

n3: dial tcp 10.0.0.3:9090: connect: connection refused (last answered 41.2s ago)
n4: sees leader - at term 5
`
	if b.String() != want {
		t.Errorf("printStatus printed:\n%s\nwant:\n%s", b.String(), want)
	}
}

// cluster status exits 8 when a probed member did not answer, answered with an
// error, or sees another leader or term: a script can alert on it.
func TestAllAnswer(t *testing.T) {
	self := func(id string, term uint64, lead string) *leader.Probe {
		return &leader.Probe{Reachable: true, Self: &leader.Self{ID: id, Term: term, LeaderID: lead}}
	}
	status := func(lead string, probes ...*leader.Probe) leader.Status {
		st := leader.Status{ID: "n1", Term: 4, LeaderID: lead}
		for i, p := range append([]*leader.Probe{self("n1", 4, lead)}, probes...) {
			st.Members = append(st.Members, leader.Member{ID: fmt.Sprintf("n%d", i+1), Probe: p})
		}
		return st
	}
	for _, c := range []struct {
		name string
		st   leader.Status
		want bool
	}{
		{"all answer", status("n1", self("n2", 4, "n1"), self("n3", 4, "n1")), true},
		{"not probed", leader.Status{ID: "n1", LeaderID: "n1", Members: []leader.Member{{ID: "n2"}}}, true},
		{"one unreachable", status("n1", self("n2", 4, "n1"), &leader.Probe{Error: "connection refused"}), false},
		{"one answered 401", status("n1", &leader.Probe{Reachable: true, Error: "answered 401"}), false},
		{"one sees another term", status("n1", self("n2", 5, "")), false},
		{"one sees another leader", status("n1", self("n2", 4, "n3")), false},
		{"no leader", status("", self("n2", 4, "")), false},
	} {
		if got := allAnswer(c.st); got != c.want {
			t.Errorf("%s: allAnswer = %v, want %v", c.name, got, c.want)
		}
	}
}

package e2e

import (
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/certtest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// adminCall sends a request to a URL of an admin listener, signed with secret
// for the node target when secret is not empty, and returns the status and the
// body.
func adminCall(t *testing.T, c *http.Client, method, url, secret, target string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if secret != "" {
		leader.Sign(req, nil, []byte(secret), target, time.Now())
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestCluster_TLSEncryptsRaftAndTheInternalAPI(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	e := newTLSCluster(t, clusterClever(), 3, ca, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	initial := slices.Clone(e.nodes)
	leaderNode := e.node(lead.ID)
	followers := others(initial, leaderNode)

	for _, n := range initial {
		for _, l := range n.p.logs() {
			if l["msg"] == "admin listening" && l["scheme"] != "https" {
				t.Errorf("%s: the admin listener serves %v, want https", n.id, l["scheme"])
			}
		}
		if strings.Contains(n.p.logText(), "cluster traffic is not encrypted") {
			t.Errorf("%s warns of plaintext cluster traffic with cluster.tls set", n.id)
		}
	}
	out, err := reaperCLI(t, "cluster", "status", "--config", followers[0].p.config)
	if err != nil || !strings.Contains(out, "leader "+lead.ID) {
		t.Errorf("reaper cluster status over TLS: %v\n%s", err, out)
	}

	// A request held on each follower; their wake asks reach the leader over HTTPS.
	e.expectApp(e.getAll(followers, "web", 1), 2, "web", 30*time.Second)
	e.checkOneStart("web")
	for _, n := range followers {
		if strings.Contains(n.p.logText(), "passing a wake ask to the job failed") {
			t.Errorf("%s could not pass a wake ask to the leader:\n%s", n.id, warnLines(n.p))
		}
	}

	// The internal API: a client certificate of the CA and the secret's signature, both.
	cert, err := tls.LoadX509KeyPair(followers[0].certFile, followers[0].keyFile)
	if err != nil {
		t.Fatal(err)
	}
	asNode := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert},
	}}}
	ask := e.adminURL(leaderNode, "/internal/asks/x")
	if code, body := adminCall(t, asNode, "POST", ask, e.secret, leaderNode.id); code != http.StatusAccepted {
		t.Errorf("an internal call with a node's certificate, signed: %d %s, want 202", code, body)
	}
	if code, body := adminCall(t, e.admin, "POST", ask, e.secret, leaderNode.id); code != http.StatusForbidden || !strings.Contains(body, "client certificate") {
		t.Errorf("an internal call without a client certificate: %d %s, want 403", code, body)
	}
	if code, body := adminCall(t, asNode, "POST", ask, "", ""); code != http.StatusUnauthorized {
		t.Errorf("an internal call with a node's certificate, unsigned: %d %s, want 401", code, body)
	}
	if code, _ := adminCall(t, clusterClient, "POST", "http://"+leaderNode.apiAddr+"/internal/asks/x", e.secret, leaderNode.id); code != http.StatusBadRequest {
		t.Errorf("an internal call over plain HTTP: %d, want 400", code)
	}
	// Health needs no client certificate.
	if code, body := adminCall(t, e.admin, "GET", e.adminURL(leaderNode, "/healthz"), "", ""); code != 200 || body != "ok\n" {
		t.Errorf("GET /healthz over HTTPS without a client certificate: %d %q", code, body)
	}

	// A node set up with another CA joins: the members refuse it, it says why, it never finds the leader.
	other := certtest.NewCA(t, "another CA")
	n4 := e.newNode("n4")
	n4.certFile, n4.keyFile = other.Issue(t, "n4", certtest.Options{}).Files(t, n4.dir, "n4-other")
	n4.caFile = certtest.Write(t, n4.dir, "other-ca.crt", other.PEM)
	e.start(n4, initial)
	if _, err := reaperCLI(t, "cluster", "join", "--config", followers[0].p.config,
		"--id", "n4", "--raft-addr", n4.raftAddr, "--api-addr", n4.apiAddr); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 15*time.Second, "n4 to log that the leader refused its certificate", func() bool {
		return strings.Contains(n4.p.logText(), "the peer refused this node's certificate")
	})
	testwait.For(t, 15*time.Second, "the leader to log that n4's certificate is not of its CA", func() bool {
		return strings.Contains(leaderNode.p.logText(), "the peer's certificate is not signed by a CA of cluster.tls.ca")
	})
	// n4 knows no leader: cluster status says so, and exits 8.
	out, code := reaperCLIExit(t, "cluster", "status", "--config", n4.p.config)
	if code != 8 || !strings.HasPrefix(out, "node n4: follower, term 0, leader -") {
		t.Errorf("n4 after the join: exit %d\n%s", code, out)
	}
	if _, err := reaperCLI(t, "cluster", "remove", "--config", followers[1].p.config, "--id", "n4"); err != nil {
		t.Fatal(err)
	}
	if st := e.waitLeader(initial, 15*time.Second, ""); st.ID != lead.ID {
		t.Errorf("the leader changed from %s to %s while n4 was refused", lead.ID, st.ID)
	}
}

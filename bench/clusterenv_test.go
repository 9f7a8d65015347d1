package main

import (
	"os"
	"strings"
	"testing"

	"github.com/reapergw/reaper/config"
)

func TestClusterNodeConfig_LoadsWithReapersOwnLoader(t *testing.T) {
	nodes := []*clusterNode{
		{id: "n1", raftAddr: "127.0.0.1:21001", apiAddr: "127.0.0.1:21002"},
		{id: "n2", raftAddr: "127.0.0.1:21003", apiAddr: "127.0.0.1:21004"},
		{id: "n3", raftAddr: "127.0.0.1:21005", apiAddr: "127.0.0.1:21006"},
	}
	p := clusterParams{redisAddr: "127.0.0.1:21007", secret: secretToken("bench-cluster-"), adminToken: "admin-token-123",
		bridgeURL: "http://127.0.0.1:21008", token: "clever-token-123",
		apps: []clusterRoute{{"app_00000000-0000-4000-8000-000000000001", "http://127.0.0.1:21009"}, {"app_00000000-0000-4000-8000-000000000002", "http://127.0.0.1:21010"}}}
	dir := t.TempDir()
	path, err := writeConfig(dir, clusterNodeConfig(nodes[1], nodes, p))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.Parse(b, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("reaper refuses the bench's cluster config: %v\n%s", err, b)
	}
	if got.Node.ID != "n2" || got.Node.AdminListen != "127.0.0.1:21004" || got.Node.AdminToken.Reveal() != "admin-token-123" || got.Node.DataDir != dir+"/data" {
		t.Errorf("node: %+v", got.Node)
	}
	if got.Store.Driver != "valkey" || got.Store.Address != p.redisAddr {
		t.Errorf("store: %+v", got.Store)
	}
	if got.Cluster == nil || got.Cluster.RaftListen != "127.0.0.1:21003" || len(got.Cluster.Peers) != 3 || got.Cluster.Peers[2].APIAddr != "127.0.0.1:21006" {
		t.Errorf("cluster: %+v", got.Cluster)
	}
	if got.PaaS.Driver != "clevercloud" || got.PaaS.CleverCloud == nil || got.PaaS.CleverCloud.APIURL != p.bridgeURL {
		t.Errorf("paas: %+v", got.PaaS)
	}
	if len(got.Routes) != 2 || got.Routes[1].Frontend.Domains[0] != "c1.test" || got.Routes[1].Backend.Targets[0].URL != "http://127.0.0.1:21010" {
		t.Errorf("routes: %+v", got.Routes)
	}
	for _, want := range []string{"api_behavior: hold", "app_id: app_00000000-0000-4000-8000-000000000002", "driver: valkey"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lacks %q:\n%s", want, b)
		}
	}
}

func TestDistinctAddrs(t *testing.T) {
	addrs, err := distinctAddrs(6)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] || !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("addresses %v", addrs)
		}
		seen[a] = true
	}
	if len(addrs) != 6 {
		t.Errorf("%d addresses", len(addrs))
	}
}

func status(id, state string, term uint64, leader string, voters ...string) clusterStatus {
	st := clusterStatus{ID: id, State: state, Term: term, LeaderID: leader}
	for _, v := range voters {
		st.Members = append(st.Members, struct {
			ID     string `json:"id"`
			Voter  bool   `json:"voter"`
			Leader bool   `json:"leader"`
		}{v, true, v == leader})
	}
	return st
}

func TestWhole_OneLeaderThreeVotersEveryNodeAgrees(t *testing.T) {
	all := []string{"n1", "n2", "n3"}
	good := []clusterStatus{
		status("n1", "follower", 5, "n2", all...),
		status("n2", "leader", 5, "n2", all...),
		status("n3", "follower", 5, "n2", all...),
	}
	if id, term, ok := whole(good, 3); !ok || id != "n2" || term != 5 {
		t.Fatalf("whole = %s, %d, %v", id, term, ok)
	}
	for _, tt := range []struct {
		name string
		sts  []clusterStatus
	}{
		{"a node missing", good[:2]},
		{"no leader known", []clusterStatus{status("n1", "candidate", 6, "", all...), good[1], good[2]}},
		{"another term", []clusterStatus{good[0], good[1], status("n3", "follower", 4, "n2", all...)}},
		{"another leader", []clusterStatus{good[0], good[1], status("n3", "follower", 5, "n1", all...)}},
		{"the leader does not say it leads", []clusterStatus{good[0], status("n2", "follower", 5, "n2", all...), good[2]}},
		{"two say they lead", []clusterStatus{status("n1", "leader", 5, "n2", all...), good[1], good[2]}},
		{"two voters only", []clusterStatus{good[0], good[1], status("n3", "follower", 5, "n2", "n2", "n3")}},
	} {
		if _, _, ok := whole(tt.sts, 3); ok {
			t.Errorf("%s: whole", tt.name)
		}
	}
}

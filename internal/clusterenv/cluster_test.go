package clusterenv

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/config"
)

func TestClusterNodeConfig_LoadsWithReapersOwnLoader(t *testing.T) {
	nodes := []*Node{
		{ID: "n1", RaftAddr: "127.0.0.1:21001", APIAddr: "127.0.0.1:21002"},
		{ID: "n2", RaftAddr: "127.0.0.1:21003", APIAddr: "127.0.0.1:21004"},
		{ID: "n3", RaftAddr: "127.0.0.1:21005", APIAddr: "127.0.0.1:21006"},
	}
	route := func(id, host, app, target string) RouteConfig {
		return RouteConfig{ID: id, Frontend: FrontendConfig{Domains: []string{host}}, Backend: BackendConfig{Targets: []string{target}},
			Plugins: []PluginConfig{{Plugin: "reaper", Config: ReaperPluginConfig{AppID: app, GracePeriod: "10m", APIBehavior: "hold",
				ReadyDelay: "500ms", MonitoringFilters: []MonitoringFilter{{Source: "user_agent", Regex: "(?i)uptimerobot"}}}}}}
	}
	p := Params{RedisAddr: "127.0.0.1:21007", Secret: SecretToken("test-cluster-"), AdminToken: "admin-token-123",
		BridgeURL: "http://127.0.0.1:21008", Token: "clever-token-123", OwnerID: "orga_00000000-0000-4000-8000-000000000000",
		Routes: []RouteConfig{
			route("c0", "c0.test", "app_00000000-0000-4000-8000-000000000001", "http://127.0.0.1:21009"),
			route("c1", "c1.test", "app_00000000-0000-4000-8000-000000000002", "http://127.0.0.1:21010"),
		}}
	dir := t.TempDir()
	cfg := ClusterNodeConfig(nodes[1], nodes, p)
	cfg.Cluster.HeartbeatTimeout, cfg.Cluster.ElectionTimeout, cfg.Cluster.LeaderLeaseTimeout = "500ms", "600ms", "250ms"
	path, err := WriteConfig(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.Parse(b, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("reaper refuses the cluster config: %v\n%s", err, b)
	}
	if got.Node.ID != "n2" || got.Node.Listen != "127.0.0.1:0" || got.Node.AdminListen != "127.0.0.1:21004" || got.Node.AdminToken.Reveal() != "admin-token-123" || got.Node.DataDir != dir+"/data" {
		t.Errorf("node: %+v", got.Node)
	}
	if got.Store.Driver != "valkey" || got.Store.Address != p.RedisAddr {
		t.Errorf("store: %+v", got.Store)
	}
	if got.Cluster == nil || got.Cluster.RaftListen != "127.0.0.1:21003" || len(got.Cluster.Peers) != 3 || got.Cluster.Peers[2].APIAddr != "127.0.0.1:21006" {
		t.Errorf("cluster: %+v", got.Cluster)
	}
	if c := got.Cluster; c == nil || c.HeartbeatTimeout.D() != 500*time.Millisecond || c.ElectionTimeout.D() != 600*time.Millisecond || c.LeaderLeaseTimeout.D() != 250*time.Millisecond {
		t.Errorf("cluster timeouts: %+v", got.Cluster)
	}
	if got.PaaS.Driver != "clevercloud" || got.PaaS.CleverCloud == nil || got.PaaS.CleverCloud.APIURL != p.BridgeURL {
		t.Errorf("paas: %+v", got.PaaS)
	}
	if len(got.Routes) != 2 || got.Routes[1].Frontend.Domains[0] != "c1.test" || got.Routes[1].Backend.Targets[0].URL != "http://127.0.0.1:21010" {
		t.Errorf("routes: %+v", got.Routes)
	}
	for _, want := range []string{"api_behavior: hold", "app_id: app_00000000-0000-4000-8000-000000000002", "driver: valkey",
		"job_interval: 10s", "ready_delay: 500ms", "regex: (?i)uptimerobot"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lacks %q:\n%s", want, b)
		}
	}
}

func TestDistinctAddrs(t *testing.T) {
	addrs, err := DistinctAddrs(6)
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

func status(id, state string, term uint64, leader string, voters ...string) Status {
	st := Status{ID: id, State: state, Term: term, LeaderID: leader}
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
	good := []Status{
		status("n1", "follower", 5, "n2", all...),
		status("n2", "leader", 5, "n2", all...),
		status("n3", "follower", 5, "n2", all...),
	}
	if id, term, ok := Whole(good, 3); !ok || id != "n2" || term != 5 {
		t.Fatalf("whole = %s, %d, %v", id, term, ok)
	}
	for _, tt := range []struct {
		name string
		sts  []Status
	}{
		{"a node missing", good[:2]},
		{"no leader known", []Status{status("n1", "candidate", 6, "", all...), good[1], good[2]}},
		{"another term", []Status{good[0], good[1], status("n3", "follower", 4, "n2", all...)}},
		{"another leader", []Status{good[0], good[1], status("n3", "follower", 5, "n1", all...)}},
		{"the leader does not say it leads", []Status{good[0], status("n2", "follower", 5, "n2", all...), good[2]}},
		{"two say they lead", []Status{status("n1", "leader", 5, "n2", all...), good[1], good[2]}},
		{"two voters only", []Status{good[0], good[1], status("n3", "follower", 5, "n2", "n2", "n3")}},
	} {
		if _, _, ok := Whole(tt.sts, 3); ok {
			t.Errorf("%s: whole", tt.name)
		}
	}
}

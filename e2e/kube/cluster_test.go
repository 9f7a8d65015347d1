package kube

import (
	"testing"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/redistest"
)

// TestCluster_ThreeNodesDriveOneWorkloadOnce: a three-node reaper cluster
// (Raft on loopback, the state in Valkey) whose every node gets requests for
// a sleeping Deployment scales it up once, through its leader, and every
// node's held requests are answered once a Pod is ready.
func TestCluster_ThreeNodesDriveOneWorkloadOnce(t *testing.T) {
	sc := newScene(t, map[string]string{"reaper.replicas": "1"})
	redis := redistest.Start(t, redistest.Options{})
	ups := sc.s.CountScaleUps(t, sc.ns)
	nodes, err := clusterenv.LoopbackNodes(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	c := clusterenv.New(bins.reaper, adminToken, sc.cl, nodes)
	err = c.WriteConfigs(clusterenv.Params{
		RedisAddr: redis.Addr(), Secret: clusterenv.SecretToken("kube-e2e-secret-"), AdminToken: adminToken,
		Job: &clusterenv.JobConfig{JobInterval: "1s", FastInterval: "200ms"}, Routes: sc.routes(),
	}, func(_ *clusterenv.Node, cfg *clusterenv.Config) { cfg.PaaS = sc.paas() })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.WaitWhole(t.Context(), waitFor); err != nil {
		t.Fatal(err)
	}
	// Every node knows web asleep before the requests: an app whose status no
	// look has set yet (WaitingForInit) is proxied to, and the demo app that
	// stands in for the Service always answers (a Service with no ready Pod
	// would refuse, and the request be held).
	if err := c.WaitAllStatus(t.Context(), []string{"web.localhost"}, "Down", waitFor); err != nil {
		t.Fatal(err)
	}
	merged := make(chan answer, 30)
	for _, n := range c.Nodes {
		go func() {
			answers := get(n.Gateway, 10)
			for range 10 {
				merged <- <-answers
			}
		}()
	}
	sc.wakeAndAnswer(merged, 30, 1)
	if n := ups("web"); n != 1 {
		t.Errorf("30 requests through 3 nodes: %d scale-ups, want 1", n)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Part G's set-up: a redis-server (the Valkey protocol) on a free loopback port,
// the fake Clever Cloud in-process (so the bench reads the time of every API call
// it answers), and three reaper nodes that form one Raft cluster on them
// (internal/clusterenv runs them; the fault harness runs the same).

const (
	clusterSize = 3
	// wholeTimeout bounds the wait for every node to agree on one leader.
	wholeTimeout = 30 * time.Second
	// The fake's timings: an app says SHOULD_BE_DOWN for clusterDeployDelay after a
	// start, then boots for clusterBoot.
	clusterBoot        = time.Second
	clusterDeployDelay = 200 * time.Millisecond
)

// benchCluster is part G's world.
type benchCluster struct {
	*clusterenv.Cluster
	e     *env
	fake  *fakeclever.Fake
	api   *slowAPI // nil without apiLatency
	redis *clusterenv.Redis
	apps  []string // the fake's app ids; app i is behind clusterHost(i)
}

func clusterHost(i int) string { return fmt.Sprintf("c%d.test", i) }

// clusterSpec is what a part's cluster is made of.
type clusterSpec struct {
	dir   string // under the bench's temporary directory: each part's nodes have their own Raft data
	apps  int    // sleeping apps, app i behind clusterHost(i)
	route func(i int, appID, edgeURL string) clusterenv.RouteConfig
	// apiLatency, when not zero, puts a slowAPI with that latency per call
	// between the nodes and the fake's API.
	apiLatency time.Duration
	// tweak, when set, changes each node's configuration before it is written.
	tweak func(*clusterenv.Node, *clusterenv.Config)
	// prefix runs each node under this command (such as nice -n 10).
	prefix []string
}

// newBenchCluster starts redis-server, the fake with the spec's sleeping apps, and
// the three nodes, and returns once every node serves. Every process is on the
// cleanup stack; close stops them earlier.
func newBenchCluster(ctx context.Context, e *env, redisBin string, spec clusterSpec) (*benchCluster, error) {
	dir := filepath.Join(e.tmp, spec.dir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	c := &benchCluster{e: e}
	started := false
	defer func() {
		if !started { // stop what did start now, not at the end of the bench
			c.close()
		}
	}()
	var err error
	if c.redis, err = clusterenv.StartRedis(ctx, e.clean, clusterenv.RedisOptions{Bin: redisBin, Dir: dir}); err != nil {
		return nil, err
	}
	token := clusterenv.SecretToken("bench-clever-")
	c.fake = fakeclever.New(fakeclever.Options{BootTime: clusterBoot, DeployDelay: clusterDeployDelay, StopLinger: 300 * time.Millisecond, Token: token})
	if err := c.fake.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting the fake Clever Cloud: %w", err)
	}
	e.clean.Push(c.fake.Close)
	params := clusterenv.Params{RedisAddr: c.redis.Addr, Secret: clusterenv.SecretToken("bench-cluster-"),
		AdminToken: clusterenv.SecretToken("bench-admin-"), BridgeURL: c.fake.BridgeURL(), Token: token,
		OwnerID: fakeclever.DefaultOrganisation}
	if spec.apiLatency > 0 {
		if c.api, err = newSlowAPI(c.fake.BridgeURL(), spec.apiLatency); err != nil {
			return nil, err
		}
		if err := c.api.start(); err != nil {
			return nil, err
		}
		e.clean.Push(c.api.close)
		params.BridgeURL = c.api.url
	}
	for i := range spec.apps {
		a := c.fake.AddApp(fakeclever.App{Name: fmt.Sprintf("bench-c%d", i), State: fakeclever.StateShouldBeDown, EdgeAddr: "127.0.0.1:0"})
		c.apps = append(c.apps, a.ID)
		params.Routes = append(params.Routes, spec.route(i, a.ID, c.fake.AppEdgeURL(a.ID)))
	}
	nodes, err := clusterenv.LoopbackNodes(dir, clusterSize)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		n.Prefix = spec.prefix
	}
	c.Cluster = clusterenv.New(e.reaperBin, params.AdminToken, e.clean, nodes)
	if err := c.WriteConfigs(params, spec.tweak); err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	started = true
	return c, nil
}

// clusterRoute is app i's route: its host, the app's own edge listener, the
// reaper plugin in hold mode with a long grace period, so that no app goes back
// to sleep during the part.
func clusterRoute(i int, appID, edgeURL string) clusterenv.RouteConfig {
	return clusterenv.RouteConfig{
		ID:       fmt.Sprintf("c%d", i),
		Frontend: clusterenv.FrontendConfig{Domains: []string{clusterHost(i)}},
		Backend:  clusterenv.BackendConfig{Targets: []string{edgeURL}},
		Plugins: []clusterenv.PluginConfig{{Plugin: "reaper", Config: clusterenv.ReaperPluginConfig{
			AppID: appID, GracePeriod: "10m", FailTimeout: "30s", APIBehavior: "hold"}}},
	}
}

// close stops the nodes, redis-server and the fake, those that started. The
// cleanup stack would too, at the end of the bench.
func (c *benchCluster) close() {
	if c.Cluster != nil {
		c.Cluster.Close()
	}
	if c.redis != nil {
		c.redis.Stop()
	}
	if c.api != nil {
		c.api.close()
	}
	if c.fake != nil {
		c.fake.Close()
	}
}

// waitAllDown waits until every node says every app is Down: the leader has
// observed them, and the followers have its records.
func (c *benchCluster) waitAllDown(ctx context.Context, timeout time.Duration) error {
	hosts := make([]string, len(c.apps))
	for i := range c.apps {
		hosts[i] = clusterHost(i)
	}
	return c.WaitAllStatus(ctx, hosts, "Down", timeout)
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// The pace of a world: short enough that apps sleep and wake several times in a
// schedule, long enough that a fault fits inside one hold.
const (
	clusterSize = 3
	gracePeriod = 5 * time.Second
	// jobInterval is the job's full pass, which puts idle apps to sleep.
	jobInterval = 2 * time.Second
	failTimeout = 20 * time.Second
	readyDelay  = 300 * time.Millisecond
	// The fake's timings.
	bootTime    = time.Second
	deployDelay = 200 * time.Millisecond
	stopLinger  = 300 * time.Millisecond
	// driverTimeout bounds one call of the Clever Cloud driver: the "timeout"
	// fault answers later than this.
	driverTimeout = 2 * time.Second
	// formTimeout bounds the wait for a new world to elect a leader and see its apps.
	formTimeout = 30 * time.Second
)

// world is one schedule's cluster: redis-server, the fake Clever Cloud with the
// apps, three reaper nodes, and with namespaces their network.
type world struct {
	e        *env
	dir      string
	clean    *clusterenv.Cleanups // this world's processes and namespaces
	fake     *fakeclever.Fake
	redis    *clusterenv.Redis
	cluster  *clusterenv.Cluster
	net      *netLayout // nil on loopback
	apps     []worldApp
	hits     *appRecorder
	gateways []string // per node: the host:port its clients dial

	mu   sync.Mutex
	down map[int]bool // nodes the load generator avoids: killed, stopping, restarting
}

// worldApp is one app of the fake and the hosts of its two routes.
type worldApp struct {
	id          string
	hold        string // the route in hold mode (browsers get the waiting page)
	unavailable string // the route in unavailable mode
}

// newWorld starts redis-server, the fake with its sleeping apps, and the three
// nodes, and returns once the cluster is whole and every node sees every app Down.
func newWorld(ctx context.Context, e *env, number int) (*world, error) {
	w := &world{e: e, dir: filepath.Join(e.tmp, fmt.Sprintf("schedule-%d", number)), clean: &clusterenv.Cleanups{},
		hits: &appRecorder{}, down: map[int]bool{}}
	e.clean.Push(w.close) // in case the harness stops before the schedule does
	if err := os.MkdirAll(w.dir, 0o750); err != nil {
		return nil, err
	}
	shared := "127.0.0.1"
	if e.net.on {
		var err error
		if w.net, err = newNetLayout(number, clusterSize, w.clean.Push); err != nil {
			return nil, err
		}
		shared = w.net.SharedIP()
	}
	var err error
	if w.redis, err = clusterenv.StartRedis(ctx, w.clean, clusterenv.RedisOptions{Bin: e.redisBin, Dir: w.dir, Host: shared, Persist: true}); err != nil {
		return nil, err
	}
	if err := w.startFake(shared); err != nil {
		return nil, err
	}
	nodes, err := w.nodes()
	if err != nil {
		return nil, err
	}
	params := clusterenv.Params{RedisAddr: w.redis.Addr, Secret: clusterenv.SecretToken("faults-cluster-"),
		AdminToken: clusterenv.SecretToken("faults-admin-"), BridgeURL: w.fake.BridgeURL(), Token: w.fake.Token(),
		OwnerID: fakeclever.DefaultOrganisation, Timeout: driverTimeout.String(),
		Job: &clusterenv.JobConfig{JobInterval: jobInterval.String(), FastInterval: "1s"}, Routes: w.routes()}
	w.cluster = clusterenv.New(e.reaperBin, params.AdminToken, w.clean, nodes)
	if err := w.cluster.WriteConfigs(params, nil); err != nil {
		return nil, err
	}
	if err := w.cluster.Start(ctx); err != nil {
		return nil, err
	}
	if _, _, err := w.cluster.WaitWhole(ctx, formTimeout); err != nil {
		return nil, err
	}
	return w, w.waitAllDown(ctx)
}

// startFake starts the fake Clever Cloud on the services' address, with the apps
// stopped, each on an edge listener of its own answered by the harness.
func (w *world) startFake(host string) error {
	free := host + ":0"
	w.fake = fakeclever.New(fakeclever.Options{BootTime: bootTime, DeployDelay: deployDelay, StopLinger: stopLinger,
		Token: clusterenv.SecretToken("faults-clever-"), BridgeAddr: free, APIAddr: free, EdgeAddr: free, AdminAddr: free})
	if err := w.fake.Start(); err != nil {
		return fmt.Errorf("faults: starting the fake Clever Cloud: %w", err)
	}
	w.clean.Push(w.fake.Close)
	for i := range w.e.opts.apps {
		id := fmt.Sprintf("app_00000000-0000-4000-8000-%012d", i+1)
		w.fake.AddApp(fakeclever.App{ID: id, Name: fmt.Sprintf("faults-%d", i), State: fakeclever.StateShouldBeDown,
			EdgeAddr: free, Handler: w.hits.handler(i, id)})
		w.apps = append(w.apps, worldApp{id: id, hold: fmt.Sprintf("h%d.test", i), unavailable: fmt.Sprintf("u%d.test", i)})
	}
	return nil
}

// nodes places the three nodes: in their namespaces, or on loopback. Either way
// a node's addresses stay the same across its restarts.
func (w *world) nodes() ([]*clusterenv.Node, error) {
	if w.net == nil {
		nodes, err := clusterenv.LoopbackNodes(w.dir, clusterSize)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if n.Listen, err = freeport.Pick(); err != nil {
				return nil, err
			}
			w.gateways = append(w.gateways, n.Listen)
		}
		return nodes, nil
	}
	var nodes []*clusterenv.Node
	for i := range clusterSize {
		id := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, &clusterenv.Node{ID: id, RaftAddr: w.net.NodeIP(i) + ":7000", APIAddr: w.net.NodeIP(i) + ":9090",
			Listen: "0.0.0.0:8080", Dir: filepath.Join(w.dir, id), Prefix: []string{"ip", "netns", "exec", w.net.Namespace(i)}})
		w.gateways = append(w.gateways, w.net.ClientIP(i)+":8080")
	}
	return nodes, nil
}

// routes gives every app two routes on its edge listener, in hold and in
// unavailable mode, with an uptime monitor's user agent as a monitoring filter.
func (w *world) routes() []clusterenv.RouteConfig {
	var out []clusterenv.RouteConfig
	for i, a := range w.apps {
		for _, r := range []struct{ id, host, mode string }{{"h", a.hold, "hold"}, {"u", a.unavailable, "unavailable"}} {
			out = append(out, clusterenv.RouteConfig{
				ID:       fmt.Sprintf("%s%d", r.id, i),
				Frontend: clusterenv.FrontendConfig{Domains: []string{r.host}},
				Backend:  clusterenv.BackendConfig{Targets: []string{w.fake.AppEdgeURL(a.id)}},
				Plugins: []clusterenv.PluginConfig{{Plugin: "reaper", Config: clusterenv.ReaperPluginConfig{
					AppID: a.id, GracePeriod: gracePeriod.String(), FailTimeout: failTimeout.String(), APIBehavior: r.mode,
					ReadyDelay: readyDelay.String(), MonitoringFilters: []clusterenv.MonitoringFilter{{Source: "user_agent", Regex: monitorUA.String()}}}}},
			})
		}
	}
	return out
}

// waitAllDown waits until every node says every app is Down.
func (w *world) waitAllDown(ctx context.Context) error {
	for i, n := range w.cluster.Nodes {
		n.Gateway = w.gateways[i]
	}
	var hosts []string
	for _, a := range w.apps {
		hosts = append(hosts, a.hold)
	}
	return w.cluster.WaitAllStatus(ctx, hosts, "Down", formTimeout)
}

// close stops everything of the world; safe to call more than once.
func (w *world) close() { w.clean.Run() }

// setDown marks node i as one the load generator must avoid, or not.
func (w *world) setDown(i int, down bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down[i] = down
}

// pickNode returns the node at or after preferred that is not down, or -1.
func (w *world) pickNode(preferred int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range clusterSize {
		if i := (preferred + k) % clusterSize; !w.down[i] {
			return i
		}
	}
	return -1
}

// Restarting a node, as a supervisor would (systemd's Restart=always).
const (
	// restartBound bounds how long a node may take to come back, retries included.
	restartBound = 30 * time.Second
	// restartPause separates two attempts.
	restartPause = 500 * time.Millisecond
)

// restart starts node i's process again on its data directory and waits until
// it serves. When the process exits before it serves (reaper does not start
// while Valkey is unreachable), it tries again, up to restartBound, and returns
// the last log line of each attempt that failed.
func (w *world) restart(ctx context.Context, i int) ([]string, error) {
	n := w.cluster.Nodes[i]
	deadline := time.Now().Add(restartBound)
	var refused []string
	for {
		if err := w.cluster.Spawn(n); err != nil {
			return refused, err
		}
		err := w.cluster.WaitServing(ctx, n)
		if err == nil {
			n.Gateway = w.gateways[i]
			return refused, nil
		}
		n.P.Stop()
		lines := n.P.Log.Snapshot()
		refused = append(refused, "no log line")
		if len(lines) > 0 {
			refused[len(refused)-1] = lines[len(lines)-1]
		}
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(restartPause)) {
			return refused, err
		}
	}
}

// isDown reports whether node i is marked down.
func (w *world) isDown(i int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down[i]
}

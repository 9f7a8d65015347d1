package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Part G's set-up: a redis-server (the Valkey protocol) on a free loopback port,
// the fake Clever Cloud in-process (so the bench reads the time of every API call
// it answers), and three reaper nodes that form one Raft cluster on them.

const (
	clusterSize = 3
	// wholeTimeout bounds the wait for every node to agree on one leader.
	wholeTimeout = 30 * time.Second
	// The fake's timings: an app says SHOULD_BE_DOWN for clusterDeployDelay after a
	// start, then boots for clusterBoot.
	clusterBoot        = time.Second
	clusterDeployDelay = 200 * time.Millisecond
)

// clusterNode is one reaper of the cluster: the addresses its peers know, picked
// before any node starts, and its current process.
type clusterNode struct {
	id, raftAddr, apiAddr string
	dir                   string // its config, logs, and data under dir/data
	config                string // its configuration file
	runs                  int    // processes started so far (one log file each)
	p                     *process
	gateway               string // host:port of the gateway, as it logged it
}

// benchCluster is part G's world.
type benchCluster struct {
	e          *env
	fake       *fakeclever.Fake
	redis      *process
	redisAddr  string
	adminToken string
	apps       []string // the fake's app ids; app i is behind clusterHost(i)
	nodes      []*clusterNode
	admin      *http.Client // the nodes' admin API
}

func clusterHost(i int) string { return fmt.Sprintf("c%d.test", i) }

// secretToken returns prefix and 24 random hex digits.
func secretToken(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// distinctAddrs returns n free loopback addresses, all different.
func distinctAddrs(n int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}

// newBenchCluster starts redis-server, the fake with that many sleeping apps, and the
// three nodes, and returns once every node serves. Every process is on the
// cleanup stack; close stops them earlier.
func newBenchCluster(ctx context.Context, e *env, redisBin string, apps int) (*benchCluster, error) {
	dir := filepath.Join(e.tmp, "cluster")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	c := &benchCluster{e: e, adminToken: secretToken("bench-admin-"), admin: newClient(2 * time.Second)}
	started := false
	defer func() {
		if !started { // stop what did start now, not at the end of the bench
			c.close()
		}
	}()
	var err error
	if c.redis, c.redisAddr, err = startRedis(ctx, e, redisBin, dir); err != nil {
		return nil, err
	}

	token := secretToken("bench-clever-")
	c.fake = fakeclever.New(fakeclever.Options{BootTime: clusterBoot, DeployDelay: clusterDeployDelay, StopLinger: 300 * time.Millisecond, Token: token})
	if err := c.fake.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting the fake Clever Cloud: %w", err)
	}
	e.clean.push(c.fake.Close)
	params := clusterParams{redisAddr: c.redisAddr, secret: secretToken("bench-cluster-"), adminToken: c.adminToken,
		bridgeURL: c.fake.BridgeURL(), token: token}
	for i := range apps {
		a := c.fake.AddApp(fakeclever.App{Name: fmt.Sprintf("bench-c%d", i), State: fakeclever.StateShouldBeDown, EdgeAddr: "127.0.0.1:0"})
		c.apps = append(c.apps, a.ID)
		params.apps = append(params.apps, clusterRoute{appID: a.ID, edgeURL: c.fake.AppEdgeURL(a.ID)})
	}

	addrs, err := distinctAddrs(2 * clusterSize)
	if err != nil {
		return nil, err
	}
	for i := range clusterSize {
		id := fmt.Sprintf("n%d", i+1)
		n := &clusterNode{id: id, raftAddr: addrs[2*i], apiAddr: addrs[2*i+1], dir: filepath.Join(dir, id)}
		if err := os.MkdirAll(n.dir, 0o750); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if n.config, err = writeConfig(n.dir, clusterNodeConfig(n, c.nodes, params)); err != nil {
			return nil, err
		}
	}
	// All three at once: a node may wait for its peers before it says it started.
	for _, n := range c.nodes {
		if err := c.spawn(n); err != nil {
			return nil, err
		}
	}
	for _, n := range c.nodes {
		if err := c.waitServing(ctx, n); err != nil {
			return nil, err
		}
	}
	started = true
	return c, nil
}

// close stops the nodes, redis-server and the fake, those that started. The
// cleanup stack would too, at the end of the bench.
func (c *benchCluster) close() {
	for _, n := range c.nodes {
		if n.p != nil {
			n.p.stop()
		}
	}
	if c.redis != nil {
		c.redis.stop()
	}
	if c.fake != nil {
		c.fake.Close()
	}
	c.admin.CloseIdleConnections()
}

// clusterParams is what every node's configuration shares.
type clusterParams struct {
	redisAddr, secret, adminToken string
	bridgeURL, token              string
	apps                          []clusterRoute
}

// clusterRoute is one app of the fake and the address of its own edge listener.
type clusterRoute struct{ appID, edgeURL string }

// clusterNodeConfig is node n's configuration: the shared store, Raft with every
// peer, the fake as the platform, and a hold-mode route per app.
func clusterNodeConfig(n *clusterNode, peers []*clusterNode, p clusterParams) reaperConfig {
	node := newNodeConfig(n.id)
	node.AdminListen, node.AdminToken = n.apiAddr, p.adminToken
	cfg := reaperConfig{
		Node:    node,
		Reaper:  &jobConfig{JobInterval: "10s", FastInterval: "1s"}, // as examples/cluster
		Store:   &storeConfig{Driver: "valkey", Address: p.redisAddr},
		Cluster: &clusterConfig{RaftListen: n.raftAddr, Secret: p.secret},
		PaaS: paasConfig{Driver: "clevercloud", CleverCloud: &cleverConfig{
			APIURL: p.bridgeURL, Token: p.token, OwnerID: fakeclever.DefaultOrganisation, Timeout: "5s"}},
	}
	for _, peer := range peers {
		cfg.Cluster.Peers = append(cfg.Cluster.Peers, peerConfig{ID: peer.id, RaftAddr: peer.raftAddr, APIAddr: peer.apiAddr})
	}
	for i, a := range p.apps {
		cfg.Routes = append(cfg.Routes, routeConfig{
			ID:       fmt.Sprintf("c%d", i),
			Frontend: frontendConfig{Domains: []string{clusterHost(i)}},
			Backend:  backendConfig{Targets: []string{a.edgeURL}},
			// A long grace period: no app goes back to sleep during the part.
			Plugins: []pluginConfig{{Plugin: "reaper", Config: reaperPluginConfig{
				AppID: a.appID, GracePeriod: "10m", FailTimeout: "30s", APIBehavior: "hold"}}},
		})
	}
	return cfg
}

// spawn starts a reaper process for n on its configuration and data directory,
// logging JSON into a new file (a restarted node's old lines must not match).
func (c *benchCluster) spawn(n *clusterNode) error {
	n.runs++
	logPath := filepath.Join(n.dir, fmt.Sprintf("reaper-%d.log", n.runs))
	args := []string{c.e.reaperBin, "serve", "--config", n.config, "--log-format", "json"}
	p, err := startProcess(c.e.clean, fmt.Sprintf("reaper (%s, run %d)", n.id, n.runs), args, os.Environ(), logPath)
	if err != nil {
		return err
	}
	n.p, n.gateway = p, ""
	return nil
}

// waitServing waits until n's current process has logged its gateway address and
// "reaper started".
func (c *benchCluster) waitServing(ctx context.Context, n *clusterNode) error {
	gw, err := n.p.waitMsg(ctx, "gateway listening", startTimeout)
	if err != nil {
		return err
	}
	if _, err := n.p.waitMsg(ctx, "reaper started", startTimeout); err != nil {
		return err
	}
	n.gateway = gw.Addr
	return nil
}

func (c *benchCluster) node(id string) *clusterNode {
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// others returns the nodes other than n.
func (c *benchCluster) others(n *clusterNode) []*clusterNode {
	var out []*clusterNode
	for _, m := range c.nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// clusterStatus is GET /api/cluster on a node's admin listener.
type clusterStatus struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Term     uint64 `json:"term"`
	LeaderID string `json:"leader_id"`
	Members  []struct {
		ID     string `json:"id"`
		Voter  bool   `json:"voter"`
		Leader bool   `json:"leader"`
	} `json:"members"`
}

var errClusterAPI = errors.New("bench: GET /api/cluster")

func (c *benchCluster) status(ctx context.Context, n *clusterNode) (clusterStatus, error) {
	var st clusterStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.apiAddr+"/api/cluster", nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+c.adminToken)
	resp, err := c.admin.Do(req)
	if err != nil {
		return st, fmt.Errorf("%w on %s: %w", errClusterAPI, n.id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return st, fmt.Errorf("%w on %s: %w", errClusterAPI, n.id, err)
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%w on %s: %d %.200s", errClusterAPI, n.id, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("%w on %s: %w", errClusterAPI, n.id, err)
	}
	return st, nil
}

// whole reports whether the statuses, one per node, show a whole cluster: every
// node names the same leader in the same term, that leader alone says it leads,
// and every node lists size voters.
func whole(sts []clusterStatus, size int) (leaderID string, term uint64, ok bool) {
	if len(sts) != size || sts[0].LeaderID == "" {
		return "", 0, false
	}
	leaderID, term = sts[0].LeaderID, sts[0].Term
	leaders := 0
	for _, st := range sts {
		if st.LeaderID != leaderID || st.Term != term {
			return "", 0, false
		}
		if st.State == "leader" {
			leaders++
			if st.ID != leaderID {
				return "", 0, false
			}
		}
		voters := 0
		for _, m := range st.Members {
			if m.Voter {
				voters++
			}
		}
		if voters != size || len(st.Members) != size {
			return "", 0, false
		}
	}
	return leaderID, term, leaders == 1
}

// waitWhole polls every node until the cluster is whole and returns its leader
// and term.
func (c *benchCluster) waitWhole(ctx context.Context, timeout time.Duration) (*clusterNode, uint64, error) {
	deadline := time.Now().Add(timeout)
	var last []string
	for {
		last = last[:0]
		var sts []clusterStatus
		for _, n := range c.nodes {
			st, err := c.status(ctx, n)
			if err != nil {
				last = append(last, err.Error())
				continue
			}
			sts = append(sts, st)
			last = append(last, fmt.Sprintf("%s: %s, term %d, leader %q, %d members", st.ID, st.State, st.Term, st.LeaderID, len(st.Members)))
		}
		if id, term, ok := whole(sts, len(c.nodes)); ok {
			return c.node(id), term, nil
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("bench: the cluster is not whole (one leader, %d voters) after %s: %s", len(c.nodes), timeout, strings.Join(last, "; "))
		}
		if !sleepCtx(ctx, 20*time.Millisecond) { // poll interval
			return nil, 0, ctx.Err()
		}
	}
}

// waitAllDown waits until every node says every app is Down: the leader has
// observed them, and the followers have its records.
func (c *benchCluster) waitAllDown(ctx context.Context, timeout time.Duration) error {
	hc := newClient(5 * time.Second)
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for _, n := range c.nodes {
		for i := range c.apps {
			if err := waitStatus(ctx, hc, n.gateway, clusterHost(i), "Down", time.Until(deadline)); err != nil {
				return fmt.Errorf("on %s: %w", n.id, err)
			}
		}
	}
	return nil
}

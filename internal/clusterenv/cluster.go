package clusterenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// A cluster of real reaper nodes (bin/reaper serve) that form one Raft cluster
// on a shared Valkey store (a redis-server) and drive the Clever Cloud driver
// against a fake Clever Cloud that the caller runs.

// StartTimeout bounds how long a reaper may take to start listening.
const StartTimeout = 20 * time.Second

// Node is one reaper of a cluster: the addresses its peers know, picked before
// any node starts, and its current process.
type Node struct {
	ID, RaftAddr, APIAddr string
	// Listen is the gateway's address in the node's configuration; empty means
	// 127.0.0.1:0 (the node logs the port it got).
	Listen string
	Dir    string // its config, logs, and data under Dir/data
	Config string // its configuration file
	// Prefix runs the binary under another command, such as `ip netns exec NS`
	// (which execs it: the process started is reaper itself).
	Prefix  []string
	Runs    int      // processes started so far (one log file each)
	P       *Process // the current process
	Gateway string   // host:port of the gateway, as the current process logged it
}

// Cluster is the nodes of one Raft cluster and how to run them.
type Cluster struct {
	Bin        string // the reaper binary
	AdminToken string
	Nodes      []*Node
	// Env is the nodes' environment; nil means the caller's.
	Env   []string
	clean *Cleanups
	admin *http.Client // the nodes' admin API
}

// New returns a cluster of nodes run from bin; the processes it starts are
// pushed onto cl.
func New(bin, adminToken string, cl *Cleanups, nodes []*Node) *Cluster {
	return &Cluster{Bin: bin, AdminToken: adminToken, Nodes: nodes, clean: cl, admin: NewClient(2 * time.Second)}
}

// LoopbackNodes returns size nodes named n1, n2, …, each with a directory under
// dir and a free loopback address for Raft and for its admin API.
func LoopbackNodes(dir string, size int) ([]*Node, error) {
	addrs, err := DistinctAddrs(2 * size)
	if err != nil {
		return nil, err
	}
	var nodes []*Node
	for i := range size {
		id := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, &Node{ID: id, RaftAddr: addrs[2*i], APIAddr: addrs[2*i+1], Dir: filepath.Join(dir, id)})
	}
	return nodes, nil
}

// WriteConfigs writes every node's configuration (ClusterNodeConfig), after
// tweak, when not nil, has changed it.
func (c *Cluster) WriteConfigs(p Params, tweak func(*Node, *Config)) error {
	for _, n := range c.Nodes {
		if err := os.MkdirAll(n.Dir, 0o750); err != nil {
			return err
		}
		cfg := ClusterNodeConfig(n, c.Nodes, p)
		if tweak != nil {
			tweak(n, &cfg)
		}
		path, err := WriteConfig(n.Dir, cfg)
		if err != nil {
			return err
		}
		n.Config = path
	}
	return nil
}

// Start starts every node at once (a node may wait for its peers before it says
// it started) and returns once each serves.
func (c *Cluster) Start(ctx context.Context) error {
	for _, n := range c.Nodes {
		if err := c.Spawn(n); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		if err := c.WaitServing(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// Spawn starts a reaper process for n on its configuration and data directory,
// logging JSON into a new file (a restarted node's old lines must not match).
func (c *Cluster) Spawn(n *Node) error {
	n.Runs++
	logPath := filepath.Join(n.Dir, fmt.Sprintf("reaper-%d.log", n.Runs))
	args := append(append([]string{}, n.Prefix...), c.Bin, "serve", "--config", n.Config, "--log-format", "json")
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	p, err := StartProcess(c.clean, fmt.Sprintf("reaper (%s, run %d)", n.ID, n.Runs), args, env, logPath)
	if err != nil {
		return err
	}
	n.P, n.Gateway = p, ""
	return nil
}

// WaitServing waits until n's current process has logged its gateway address and
// "reaper started".
func (c *Cluster) WaitServing(ctx context.Context, n *Node) error {
	gw, err := n.P.WaitMsg(ctx, "gateway listening", StartTimeout)
	if err != nil {
		return err
	}
	if _, err := n.P.WaitMsg(ctx, "reaper started", StartTimeout); err != nil {
		return err
	}
	n.Gateway = gw.Addr
	return nil
}

// Close stops every node's process (SIGTERM, then SIGKILL after the grace); the
// cleanup stack would too, at the end.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		if n.P != nil {
			n.P.Stop()
		}
	}
	c.admin.CloseIdleConnections()
}

// Node returns the node of that id, or nil.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Others returns the nodes other than n.
func (c *Cluster) Others(n *Node) []*Node {
	var out []*Node
	for _, m := range c.Nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// Params is what every node's configuration shares.
type Params struct {
	RedisAddr, Secret, AdminToken string
	// The fake Clever Cloud: its bridge URL, the token it accepts, the apps'
	// owner, and the driver's bound on one call (empty: 5s).
	BridgeURL, Token, OwnerID, Timeout string
	// Job is the reaper section; nil means the job intervals of examples/cluster.
	Job    *JobConfig
	Routes []RouteConfig
}

// ClusterNodeConfig is node n's configuration: the shared store, Raft with every
// peer, the fake Clever Cloud as the platform, and the routes.
func ClusterNodeConfig(n *Node, peers []*Node, p Params) Config {
	listen := n.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	job := p.Job
	if job == nil {
		job = &JobConfig{JobInterval: "10s", FastInterval: "1s"} // as examples/cluster
	}
	timeout := p.Timeout
	if timeout == "" {
		timeout = "5s"
	}
	cfg := Config{
		Node:    NodeConfig{ID: n.ID, Listen: listen, AdminListen: n.APIAddr, AdminToken: p.AdminToken, ShutdownTimeout: "2s"},
		Reaper:  job,
		Store:   &StoreConfig{Driver: "valkey", Address: p.RedisAddr},
		Cluster: &ClusterConfig{RaftListen: n.RaftAddr, Secret: p.Secret},
		PaaS: PaaSConfig{Driver: "clevercloud", CleverCloud: &CleverConfig{
			APIURL: p.BridgeURL, Token: p.Token, OwnerID: p.OwnerID, Timeout: timeout}},
		Routes: p.Routes,
	}
	for _, peer := range peers {
		cfg.Cluster.Peers = append(cfg.Cluster.Peers, PeerConfig{ID: peer.ID, RaftAddr: peer.RaftAddr, APIAddr: peer.APIAddr})
	}
	return cfg
}

package leader

import (
	"context"
	"fmt"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Secrets are printable so that a test can search the logs for them.
var (
	testSecret     = []byte("good-cluster-secret-7f3a9c1e")
	strangerSecret = []byte("wrong-cluster-secret-b8d2e046")
)

// leaderCall is one call of whileLeader.
type leaderCall struct {
	term     uint64
	ctx      context.Context
	returned chan struct{}
}

// recorder is a whileLeader that records its calls, blocks until its context ends, and notes overlaps.
type recorder struct {
	mu      sync.Mutex
	calls   []*leaderCall
	active  atomic.Int32
	overlap atomic.Bool
}

func (r *recorder) whileLeader(ctx context.Context, term uint64) {
	if r.active.Add(1) > 1 {
		r.overlap.Store(true)
	}
	c := &leaderCall{term: term, ctx: ctx, returned: make(chan struct{})}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	<-ctx.Done()
	r.active.Add(-1)
	close(c.returned)
}

func (r *recorder) all() []*leaderCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*leaderCall(nil), r.calls...)
}

// callFor returns the call made for term, or nil.
func (r *recorder) callFor(term uint64) *leaderCall {
	for _, c := range r.all() {
		if c.term == term {
			return c
		}
	}
	return nil
}

// testNode is one member of a test cluster with Run going.
type testNode struct {
	cfg     Config
	node    *Node
	logs    *logtest.Buffer
	rec     *recorder
	stopRun context.CancelFunc
	runDone chan struct{}
}

type cluster struct {
	t     *testing.T
	peers []Peer
	nodes map[string]*testNode
	all   []*testNode // every node ever started, for cleanup and log dumps
}

// newCluster binds n loopback listeners on free ports, then starts n nodes that bootstrap with those
// addresses as peers. The listeners are bound first so that no port is chosen and then lost. Nothing
// listens on the peers' API addresses.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	apiAddrs := make([]string, n)
	for i := range apiAddrs {
		apiAddrs[i] = fmt.Sprintf("127.0.0.1:%d", 19001+i)
	}
	return newClusterAt(t, apiAddrs)
}

// newClusterAt is newCluster with one node per API address, named n1, n2, … in that order.
func newClusterAt(t *testing.T, apiAddrs []string) *cluster {
	t.Helper()
	return newClusterWith(t, apiAddrs, nil)
}

// newClusterWith is newClusterAt where the node of each id in tlsOf has that TLS.
func newClusterWith(t *testing.T, apiAddrs []string, tlsOf map[string]*TLS) *cluster {
	t.Helper()
	c := &cluster{t: t, nodes: make(map[string]*testNode)}
	t.Cleanup(c.close)
	lns := make([]net.Listener, len(apiAddrs))
	for i, api := range apiAddrs {
		lns[i] = listen(t)
		c.peers = append(c.peers, Peer{
			ID:       fmt.Sprintf("n%d", i+1),
			RaftAddr: lns[i].Addr().String(),
			APIAddr:  api,
		})
	}
	for i, p := range c.peers {
		cfg := c.config(p.ID, c.peers, testSecret)
		cfg.TLS = tlsOf[p.ID]
		c.start(cfg, lns[i])
	}
	return c
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func (c *cluster) config(id string, peers []Peer, secret []byte) Config {
	return Config{
		NodeID:     id,
		RaftListen: "127.0.0.1:0",
		Peers:      peers,
		Secret:     secret,
		DataDir:    c.t.TempDir(),
	}
}

// start starts a node on ln (or on cfg.RaftListen when ln is nil) and runs a recorder on it.
func (c *cluster) start(cfg Config, ln net.Listener) *testNode {
	c.t.Helper()
	tn := &testNode{cfg: cfg, logs: &logtest.Buffer{}, rec: &recorder{}, runDone: make(chan struct{})}
	cfg.Logger = tn.logs.Logger(slog.LevelInfo)
	var err error
	if ln != nil {
		tn.node, err = newWithListener(cfg, ln)
	} else {
		tn.node, err = New(cfg)
	}
	if err != nil {
		c.t.Fatalf("start %s: %v", cfg.NodeID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn.stopRun = cancel
	go func() {
		defer close(tn.runDone)
		tn.node.Run(ctx, tn.rec.whileLeader)
	}()
	c.nodes[cfg.NodeID] = tn
	c.all = append(c.all, tn)
	return tn
}

// stop shuts a node down and waits for its Run to return.
func (c *cluster) stop(id string) {
	c.t.Helper()
	tn := c.nodes[id]
	if err := tn.node.Shutdown(); err != nil {
		c.t.Errorf("shutdown %s: %v", id, err)
	}
	select {
	case <-tn.runDone:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("Run of %s did not return after Shutdown", id)
	}
	delete(c.nodes, id)
}

func (c *cluster) close() {
	for _, tn := range c.all {
		tn.stopRun()
		_ = tn.node.Shutdown()
		<-tn.runDone
	}
	if c.t.Failed() {
		for _, tn := range c.all {
			c.t.Logf("---- logs of %s ----\n%s", tn.cfg.NodeID, tn.logs.String())
		}
	}
}

// waitAgreement waits until every given node knows the same leader, one of them, at the same term, and that
// leader says it is leader. It returns the leader and the term.
func (c *cluster) waitAgreement(timeout time.Duration, ids ...string) (*testNode, uint64) {
	c.t.Helper()
	var leader *testNode
	var term uint64
	testwait.For(c.t, timeout, fmt.Sprintf("agreement on a leader among %v", ids), func() bool {
		lid, _, ok := c.nodes[ids[0]].node.Leader()
		if !ok || c.nodes[lid] == nil || !c.nodes[lid].node.IsLeader() {
			return false
		}
		term = c.nodes[lid].node.Term()
		for _, id := range ids {
			got, _, ok := c.nodes[id].node.Leader()
			if !ok || got != lid || c.nodes[id].node.Term() != term {
				return false
			}
		}
		leader = c.nodes[lid]
		return true
	})
	return leader, term
}

func (c *cluster) ids() []string {
	ids := make([]string, 0, len(c.nodes))
	for _, p := range c.peers {
		if c.nodes[p.ID] != nil {
			ids = append(ids, p.ID)
		}
	}
	for id := range c.nodes {
		if !containsPeer(c.peers, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func containsPeer(peers []Peer, id string) bool {
	for _, p := range peers {
		if p.ID == id {
			return true
		}
	}
	return false
}

func (c *cluster) apiAddr(id string) string {
	for _, p := range c.peers {
		if p.ID == id {
			return p.APIAddr
		}
	}
	return ""
}

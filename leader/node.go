package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

const (
	// transportTimeout is the I/O deadline of one Raft RPC (and of dialling a peer).
	transportTimeout = 5 * time.Second
	// transportPool is how many idle connections are kept per peer.
	transportPool = 3
	// notifyBuffer is the buffer of Raft's NotifyCh; the node drains it continuously.
	notifyBuffer = 16
	// retainSnapshots is how many snapshots stay on disk.
	retainSnapshots = 2
	// logCacheSize is how many recent log entries are kept in memory.
	logCacheSize = 256
	// storeOpenTimeout bounds the wait for the bolt file lock, so a second process on the same data
	// directory fails instead of hanging.
	storeOpenTimeout = 2 * time.Second
	// defaultOpTimeout bounds enqueueing a Raft operation when the caller's ctx has no deadline.
	defaultOpTimeout = 10 * time.Second
	// certWarnBefore is how long before this node's certificate expires a start logs a warning.
	certWarnBefore = 30 * 24 * time.Hour
)

var (
	// ErrNotLeader is returned (possibly wrapped) by operations that only the leader may do, when this
	// node is not the leader or loses leadership before the operation commits.
	ErrNotLeader = errors.New("leader: not the leader")
	// ErrShutdown is returned (possibly wrapped) by operations on a node that is shut down.
	ErrShutdown = errors.New("leader: node is shut down")
)

// Node is this process's member of the Raft cluster. Its methods are safe for concurrent use.
type Node struct {
	cfg    Config
	log    *slog.Logger
	raft   *raft.Raft
	store  *raftboltdb.BoltStore
	dir    *directory
	caller *caller // internal calls to other nodes
	nonces *nonces // of the internal calls taken, each taken once

	notifyCh  chan bool
	lead      *leadership
	runSem    chan struct{} // serialises Run
	stopWatch chan struct{}
	watchDone chan struct{}
	bg        sync.WaitGroup // establish goroutines

	shutdownOnce sync.Once
	shutdownErr  error
}

// New opens the stores under cfg.DataDir/raft, listens on cfg.RaftListen and starts Raft. When the data
// directory holds no Raft state and this node is listed in cfg.Peers, it bootstraps the cluster with
// exactly cfg.Peers; with existing state it never bootstraps again, and a node not in cfg.Peers waits to be
// added by the leader (AddVoter). New does not wait for an election. Errors wrap ErrConfig for an invalid
// configuration; other errors come from the stores, the listener or Raft, and leave nothing running.
func New(cfg Config) (*Node, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", c.RaftListen)
	if err != nil {
		return nil, fmt.Errorf("leader: listen for raft on %s: %w", c.RaftListen, err)
	}
	return start(c, ln)
}

// newWithListener is New on a listener the caller already holds (tests bind 127.0.0.1:0 first and put the
// chosen ports in Peers). The node owns ln from here on.
func newWithListener(cfg Config, ln net.Listener) (*Node, error) {
	c, err := cfg.resolve()
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	return start(c, ln)
}

// start builds the node on ln (see New): its stores, its transport, then Raft, and it bootstraps the
// cluster if it is new. When a step fails, what the earlier steps opened is closed again, in reverse order.
func start(c Config, ln net.Listener) (_ *Node, err error) {
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	closers = append(closers, ln.Close)

	log := c.Logger.With("node_id", c.NodeID)
	if len(c.Secret) < shortSecretLen {
		log.Warn("leader: cluster secret is short; use at least 16 random bytes", "min_len", shortSecretLen)
	}
	if c.TLS != nil {
		if left := time.Until(c.TLS.NotAfter()); left < certWarnBefore {
			log.Warn("leader: this node's cluster certificate expires soon: renew it (cluster.tls.cert) and restart the node",
				"not_after", c.TLS.NotAfter().UTC().Format(time.RFC3339), "left", left.Round(time.Minute))
		}
	}
	hlog := newHCLogger(log, "raft")
	dir := filepath.Join(c.DataDir, "raft")
	st, err := openStores(dir, hlog)
	if err != nil {
		return nil, err
	}
	closers = append(closers, st.bolt.Close)
	trans := newTransport(ln, c, log, hlog)
	closers = append(closers, trans.Close)

	n := newNode(c, log, st.bolt)
	if err := n.startRaft(st, trans, hlog); err != nil {
		return nil, err
	}
	closers = nil // from here on, Shutdown releases everything
	go n.watch()
	if err := n.bootstrapIfNew(st.existing, dir); err != nil {
		_ = n.Shutdown()
		return nil, err
	}
	return n, nil
}

// raftStores are the node's Raft state on disk, in dir: the log and the stable store share one bolt file.
type raftStores struct {
	bolt     *raftboltdb.BoltStore
	logs     raft.LogStore // bolt, behind a cache of the recent entries
	snaps    raft.SnapshotStore
	existing bool // dir already holds Raft state
}

// openStores creates dir if need be and opens the stores in it. The bolt file is opened with a timeout on
// its lock, so that a second process on the same data directory fails instead of hanging. When a later
// store fails, openStores closes the bolt file again.
func openStores(dir string, hlog *hclogLogger) (_ raftStores, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return raftStores{}, fmt.Errorf("leader: data dir: %w", err)
	}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: storeOpenTimeout},
	})
	if err != nil {
		return raftStores{}, fmt.Errorf("leader: open raft store in %s (in use by another process?): %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = store.Close()
		}
	}()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, retainSnapshots, hlog.Named("snapshots"))
	if err != nil {
		return raftStores{}, fmt.Errorf("leader: open snapshot store: %w", err)
	}
	logs, err := raft.NewLogCache(logCacheSize, store)
	if err != nil {
		return raftStores{}, fmt.Errorf("leader: log cache: %w", err)
	}
	existing, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		return raftStores{}, fmt.Errorf("leader: read raft state: %w", err)
	}
	return raftStores{bolt: store, logs: logs, snaps: snaps, existing: existing}, nil
}

// newTransport is Raft's transport on ln, whose connections authenticate with the cluster's secret, inside
// TLS when c.TLS is set.
func newTransport(ln net.Listener, c Config, log *slog.Logger, hlog *hclogLogger) *raft.NetworkTransport {
	stream := newAuthStream(ln, streamOptions{
		Advertise: c.Advertise,
		Secret:    c.Secret,
		ID:        c.NodeID,
		Timeout:   defaultHandshakeTimeout,
		TLS:       c.TLS,
		Log:       log,
	})
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: transportPool,
		Timeout: transportTimeout,
		Logger:  hlog.Named("transport"),
	})
}

// newNode is the node before Raft starts: its membership directory holds the configured peers.
func newNode(c Config, log *slog.Logger, store *raftboltdb.BoltStore) *Node {
	return &Node{
		cfg:       c,
		log:       log,
		store:     store,
		dir:       newDirectory(c.Peers),
		caller:    newCaller(c.Secret, c.TLS),
		nonces:    newNonces(maxNonces),
		notifyCh:  make(chan bool, notifyBuffer),
		lead:      newLeadership(),
		runSem:    make(chan struct{}, 1),
		stopWatch: make(chan struct{}),
		watchDone: make(chan struct{}),
	}
}

// startRaft starts Raft on the stores and the transport, with the configured timeouts; leadership changes
// arrive on n.notifyCh. An invalid Raft configuration wraps ErrConfig.
func (n *Node) startRaft(st raftStores, trans raft.Transport, hlog *hclogLogger) error {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.NodeID)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.NotifyCh = n.notifyCh
	rc.Logger = hlog
	if err := raft.ValidateConfig(rc); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	r, err := raft.NewRaft(rc, n.dir, st.logs, st.bolt, st.snaps, trans)
	if err != nil {
		return fmt.Errorf("leader: start raft: %w", err)
	}
	n.raft = r
	return nil
}

// bootstrapIfNew bootstraps the cluster when dir holds no Raft state and this node is one of the configured
// peers. Otherwise it only says how the node joins: Raft rejoins from its state by itself, and a node that
// is not a configured peer waits to be added by the leader.
func (n *Node) bootstrapIfNew(existing bool, dir string) error {
	_, listed := n.cfg.self()
	switch {
	case existing:
		n.log.Info("leader: existing raft state found, rejoining", "data_dir", dir)
	case !listed:
		n.log.Info("leader: not in the initial peers and no raft state; waiting to be added by the leader")
	default:
		return n.bootstrap()
	}
	return nil
}

// bootstrap writes the initial membership (cfg.Peers) into the empty log.
func (n *Node) bootstrap() error {
	servers := make([]raft.Server, 0, len(n.cfg.Peers))
	ids := make([]string, 0, len(n.cfg.Peers))
	for _, p := range n.cfg.Peers {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		ids = append(ids, p.ID)
	}
	n.log.Info("leader: bootstrapping cluster", "members", ids)
	err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		// A peer that bootstrapped first reached us between the look at our
		// empty state and now: its leader already wrote the same membership
		// into our log. Nothing is left to do.
		n.log.Info("leader: a peer's leader reached this node first; joined through it")
		return nil
	}
	if err != nil {
		return fmt.Errorf("leader: bootstrap: %w", err)
	}
	return nil
}

// Shutdown stops Raft, cancels the context of a running whileLeader (Run then returns once it has), closes
// the listener and the stores. It blocks until Raft's goroutines have exited. Idempotent: later calls return
// the first call's error.
func (n *Node) Shutdown() error {
	n.shutdownOnce.Do(func() {
		// raft closes the transport (and with it the listener) once its goroutines are done.
		err := n.raft.Shutdown().Error()
		close(n.stopWatch)
		<-n.watchDone
		n.bg.Wait()
		n.caller.client.CloseIdleConnections()
		n.shutdownErr = errors.Join(err, n.store.Close())
		if n.shutdownErr != nil {
			n.shutdownErr = fmt.Errorf("leader: shutdown: %w", n.shutdownErr)
		}
		n.log.Info("leader: node shut down")
	})
	return n.shutdownErr
}

// waitFuture waits for f, or returns ctx.Err() when ctx ends first. Raft resolves every future (on commit,
// on leadership loss or on shutdown), so the helper goroutine always ends. Raft's errors are mapped to
// ErrNotLeader and ErrShutdown.
func waitFuture(ctx context.Context, f raft.Future) error {
	res := make(chan error, 1)
	go func() { res <- f.Error() }()
	select {
	case err := <-res:
		return raftErr(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func raftErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	default:
		return fmt.Errorf("leader: raft: %w", err)
	}
}

// opTimeout is how long Raft may wait to enqueue an operation: until ctx's deadline, else defaultOpTimeout.
func opTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return defaultOpTimeout
}

package leader

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"
)

// Default Raft timeouts (cluster.heartbeat_timeout, election_timeout, leader_lease_timeout; docs/cluster.md#raft-timeouts).
// A follower notices a dead leader after 2–4 s without a heartbeat, and an election on a LAN takes a few round
// trips, so a new leader is in place within about 2–4 s. They were 0.5 s, 0.5 s and 0.25 s: on a loaded 2-core
// machine that gave 5 elections in 20 minutes with no fault, and part I of `make bench` 9 leaders elected in a
// minute of CPU load where these gave none (issue 20, item 10): a slower failover, for no churn.
const (
	DefaultHeartbeatTimeout   = 2 * time.Second
	DefaultElectionTimeout    = 2 * time.Second
	DefaultLeaderLeaseTimeout = time.Second
)

// maxIDLen bounds node ids, both in the configuration and in what a peer may claim during the handshake.
const maxIDLen = 128

// maxAddrLen bounds addresses written into the replicated log.
const maxAddrLen = 256

// shortSecretLen is the length under which a cluster secret draws a warning.
const shortSecretLen = 16

// ErrConfig is wrapped by every error New returns for an invalid Config.
var ErrConfig = errors.New("leader: invalid config")

// Peer is one member of the cluster.
type Peer struct {
	ID       string // the Raft server id, unique in the cluster
	RaftAddr string // host:port other nodes dial for Raft
	APIAddr  string // the peer's admin listener (internal API); may be empty when unknown
}

// Config configures a Node. Zero timeouts take the defaults above.
type Config struct {
	NodeID     string
	RaftListen string // bind address, e.g. 127.0.0.1:7000
	// Advertise is the address other nodes dial. Default: this node's RaftAddr in Peers, else RaftListen.
	Advertise string
	// Peers is the initial membership. A node listed here bootstraps the cluster with exactly this list the
	// first time it starts on an empty DataDir; afterwards the list only seeds the id → API address map.
	Peers []Peer
	// Secret authenticates every Raft connection (HMAC-SHA256 challenge–response) and internal call.
	// Required.
	Secret []byte
	// TLS, when set, encrypts Raft connections and internal calls with mutual TLS (see TLS); API.Internal
	// then also refuses calls without a client certificate the cluster's CAs signed. Nil: plain TCP and HTTP.
	TLS *TLS
	// DataDir holds the Raft log, the stable store (bolt) and snapshots under DataDir/raft.
	DataDir string
	Logger  *slog.Logger

	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
}

// resolve validates c and returns a copy with defaults filled in (Advertise, timeouts, Logger) and the
// slices copied, so later changes by the caller do not reach the node. Errors wrap ErrConfig.
func (c Config) resolve() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if c.NodeID == "" {
		return bad("NodeID is required")
	}
	if len(c.NodeID) > maxIDLen {
		return bad("NodeID is longer than %d bytes", maxIDLen)
	}
	if c.RaftListen == "" {
		return bad("RaftListen is required")
	}
	if len(c.Secret) == 0 {
		return bad("cluster.secret is required: it authenticates every raft connection")
	}
	if c.DataDir == "" {
		return bad("DataDir is required")
	}
	c.Secret = slices.Clone(c.Secret)
	c.Peers = slices.Clone(c.Peers)
	ids := make(map[string]bool, len(c.Peers))
	addrs := make(map[string]bool, len(c.Peers))
	for i, p := range c.Peers {
		switch {
		case p.ID == "":
			return bad("Peers[%d].ID is required", i)
		case len(p.ID) > maxIDLen:
			return bad("Peers[%d].ID is longer than %d bytes", i, maxIDLen)
		case p.RaftAddr == "":
			return bad("Peers[%d].RaftAddr is required", i)
		case len(p.RaftAddr) > maxAddrLen || len(p.APIAddr) > maxAddrLen:
			return bad("Peers[%d] has an address longer than %d bytes", i, maxAddrLen)
		case ids[p.ID]:
			return bad("Peers[%d].ID %q is listed twice", i, p.ID)
		case addrs[p.RaftAddr]:
			return bad("Peers[%d].RaftAddr %q is listed twice", i, p.RaftAddr)
		}
		ids[p.ID], addrs[p.RaftAddr] = true, true
	}
	if self, ok := c.self(); ok {
		if c.Advertise == "" {
			c.Advertise = self.RaftAddr
		} else if c.Advertise != self.RaftAddr {
			// Raft membership holds the peer's address; a different advertised address would make
			// followers report a leader address nobody else knows.
			return bad("Advertise %q differs from this node's RaftAddr %q in Peers", c.Advertise, self.RaftAddr)
		}
	}
	if c.Advertise == "" {
		c.Advertise = c.RaftListen
	}
	if err := checkDialable(c.Advertise); err != nil {
		return bad("Advertise %q: %v", c.Advertise, err)
	}
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout =
		Timeouts(c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout)
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return bad("LeaderLeaseTimeout (%s) must not exceed HeartbeatTimeout (%s)", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.ElectionTimeout < c.HeartbeatTimeout {
		return bad("ElectionTimeout (%s) must not be below HeartbeatTimeout (%s)", c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Timeouts fills zero timeouts as a Node does. The others follow the heartbeat when only it is given, so that
// setting a single value keeps the three consistent (election ≥ heartbeat ≥ lease). It does not check them.
func Timeouts(heartbeat, election, lease time.Duration) (time.Duration, time.Duration, time.Duration) {
	if heartbeat == 0 {
		heartbeat = DefaultHeartbeatTimeout
		if election != 0 {
			heartbeat = min(heartbeat, election)
		}
	}
	if election == 0 {
		election = heartbeat
	}
	if lease == 0 {
		lease = heartbeat / 2
	}
	return heartbeat, election, lease
}

// self returns this node's entry in Peers.
func (c Config) self() (Peer, bool) {
	for _, p := range c.Peers {
		if p.ID == c.NodeID {
			return p, true
		}
	}
	return Peer{}, false
}

// checkDialable refuses addresses other nodes cannot dial: no port, or an unspecified host (0.0.0.0, ::).
func checkDialable(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if port == "" || port == "0" {
		return errors.New("needs a fixed port")
	}
	if host == "" {
		return errors.New("needs a host other nodes can dial")
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		return errors.New("needs a host other nodes can dial, not an unspecified address")
	}
	return nil
}

package main

import (
	"log/slog"
	"net"
	"net/netip"
	"slices"

	"github.com/reapergw/reaper/config"
)

// warnPlaintextCluster warns, once at start, when the cluster's traffic leaves
// the machine unencrypted: cluster.tls is not set, and one of this node's Raft or
// admin addresses, or one of its peers', is not a loopback address. It names
// those addresses (never the secret).
func warnPlaintextCluster(log *slog.Logger, cfg *config.Config) {
	c := cfg.Cluster
	if c == nil || c.TLS != nil {
		return
	}
	addrs := []string{c.RaftListen, c.Advertise, cfg.Node.AdminListen}
	for _, p := range c.Peers {
		addrs = append(addrs, p.RaftAddr, p.APIAddr)
	}
	var exposed []string
	for _, a := range addrs {
		if a != "" && !loopback(a) && !slices.Contains(exposed, a) {
			exposed = append(exposed, a)
		}
	}
	if len(exposed) == 0 {
		return
	}
	log.Warn("cluster traffic is not encrypted: without cluster.tls, Raft's messages and the internal calls "+
		"(wake asks, membership changes) cross the network in plaintext, where they can be read, and a Raft "+
		"connection taken over once the cluster secret has opened it; set cluster.tls {cert, key, ca} on every "+
		"node (docs/cluster.md, \"Encrypting cluster traffic\")",
		"addresses", exposed)
}

// loopback reports whether addr (host:port) is on a loopback address, which no
// other machine can reach. A host name other than localhost may resolve anywhere,
// and an empty or unspecified host listens on every address: neither is.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

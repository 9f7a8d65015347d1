package main

import (
	"log/slog"
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
		if a != "" && !config.LoopbackAddr(a) && !slices.Contains(exposed, a) {
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

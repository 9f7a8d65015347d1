package main

import (
	"context"
	"sync"

	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/tcproute"
)

// listenTCP binds the ports of tcp_routes, each route claiming its app on the
// engine (the same holds, traffic and wake asks as HTTP routes: on every node
// of a cluster, a wake ask goes to the leader).
func (n *node) listenTCP(ctx context.Context) error {
	if len(n.cfg.TCPRoutes) == 0 {
		return nil
	}
	n.tcp = tcproute.New(tcproute.Options{
		Routes: n.cfg.TCPRoutes,
		Claim: func(id string, policy *reaper.Config) tcproute.App {
			return n.parts.engine.Claim(id, id, policy)
		},
		Logger:   n.log,
		Observer: n.parts.metrics,
	})
	ids := make([]string, len(n.cfg.TCPRoutes))
	for i, r := range n.cfg.TCPRoutes {
		ids[i] = r.ID
	}
	n.parts.metrics.WatchTCP(ids, func(id string) (int64, int64) {
		c, _ := n.tcp.Counts(id)
		return c.Held, c.Spliced
	})
	return n.tcp.Listen(ctx)
}

// serveTCP accepts on the TCP routes' ports until stopTCP.
func (n *node) serveTCP() {
	if n.tcp == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	done.Go(func() { n.tcp.Serve(ctx) })
	for _, r := range n.cfg.TCPRoutes {
		n.log.Info("tcp route listening", "route", r.ID, "addr", n.tcp.Addr(r.ID).String(), "app", r.AppID, "target", r.Target)
	}
	n.tcpStop = func() {
		cancel()
		done.Wait()
	}
}

// stopTCP closes the TCP routes' ports and connections; idempotent.
func (n *node) stopTCP() {
	if n.tcpStop != nil {
		n.tcpStop()
		n.tcpStop = nil
	} else if n.tcp != nil {
		n.tcp.Close()
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud"
	"github.com/reapergw/reaper/paas/process"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/reaper/valkeystore"
)

// settleDelay is how long the leader waits, between marking an app
// WaitingForShutdown and stopping it, for the other nodes to report traffic: the
// engines' fallback poll (2 s) plus a margin.
const settleDelay = 2500 * time.Millisecond

// parts are the long-lived pieces behind the gateway: the store, the platform
// driver, the reaper engine and its job. Only this file builds them.
type parts struct {
	store  reaper.Store
	driver paas.Client
	engine *reaper.Engine
	job    *reaper.Job
	leader *leader.Node // nil on a single node
	log    *slog.Logger

	closers []func() error
	runners []func(ctx context.Context)
}

func buildParts(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*parts, error) {
	p := &parts{log: logger}
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()

	switch cfg.Store.Driver {
	case config.StoreMemory:
		ms, err := reaper.NewMemStore(reaper.MemStoreOptions{
			Path:   filepath.Join(cfg.Node.DataDir, "state.json"),
			Logger: logger.With("part", "store"),
		})
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		p.store = ms
		p.runners = append(p.runners, ms.Run)
		p.closers = append(p.closers, ms.Close)
	case config.StoreValkey:
		vs, err := valkeystore.New(ctx, valkeystore.Options{
			Address:  cfg.Store.Address,
			Username: cfg.Store.Username,
			Password: cfg.Store.Password.Reveal(),
			TLS:      cfg.Store.TLS,
			Prefix:   cfg.Store.Prefix,
			Logger:   logger.With("part", "store"),
		})
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		p.store = vs
		p.closers = append(p.closers, vs.Close)
	}

	readyDelay := 3 * time.Second
	switch cfg.PaaS.Driver {
	case config.DriverProcess:
		d, err := process.New(process.Options{DataDir: cfg.Node.DataDir, Apps: cfg.PaaS.Apps, Logger: logger.With("part", "process")})
		if err != nil {
			return nil, fmt.Errorf("paas: %w", err)
		}
		p.driver = d
		p.closers = append(p.closers, d.Close)
		readyDelay = 0 // readiness is probed: up means answering
	case config.DriverCleverCloud:
		d, err := clevercloud.New(*cfg.PaaS.CleverCloud, clevercloud.Options{Logger: logger.With("part", "clevercloud"), Version: version})
		if err != nil {
			return nil, fmt.Errorf("paas.clevercloud: %w", err)
		}
		p.driver = d
	}

	engineOpts := reaper.EngineOptions{
		Node:       cfg.Node.ID,
		Store:      p.store,
		Logger:     logger.With("part", "reaper"),
		ReadyDelay: readyDelay,
		GuessAppID: config.GuessAppID,
		MaxHeld:    nodeMaxHeld(cfg.Reaper.MaxHeld),
	}
	if cfg.PaaS.Driver == config.DriverCleverCloud {
		engineOpts.NotReadyYet = clevercloud.IsNotReadyYet
	}
	p.engine = reaper.NewEngine(engineOpts)
	jobOpts := reaper.JobOptions{
		Engine:       p.engine,
		Store:        p.store,
		PaaS:         p.driver,
		Logger:       logger.With("part", "job"),
		FastInterval: cfg.Reaper.FastInterval.D(),
		FullInterval: cfg.Reaper.JobInterval.D(),
	}
	if c := cfg.Cluster; c != nil {
		peers := make([]leader.Peer, len(c.Peers))
		for i, pc := range c.Peers {
			peers[i] = leader.Peer{ID: pc.ID, RaftAddr: pc.RaftAddr, APIAddr: pc.APIAddr}
		}
		ln, err := leader.New(leader.Config{
			NodeID:     cfg.Node.ID,
			RaftListen: c.RaftListen,
			Advertise:  c.Advertise,
			Peers:      peers,
			Secret:     []byte(c.Secret.Reveal()),
			DataDir:    cfg.Node.DataDir,
			Logger:     logger.With("part", "raft"),
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		p.leader = ln
		if !inPeers(cfg) {
			logger.Warn("this node is not in cluster.peers: it does not bootstrap a cluster and waits to be added (reaper cluster join)", "node", cfg.Node.ID)
		}
		p.closers = append(p.closers, ln.Shutdown)
		jobOpts.Fence = ln
		// Other nodes see a WaitingForShutdown through the store's notification
		// (or their next poll) and flush their traffic at once: give them that.
		jobOpts.SettleDelay = settleDelay
	}
	p.job = reaper.NewJob(jobOpts)
	if cfg.Reaper.DryRun {
		// Keep whatever else an operator set (the kill switch).
		s, err := p.store.Settings(ctx)
		if err == nil && !s.DryRun {
			s.DryRun = true
			err = p.store.PutSettings(ctx, s)
		}
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	p.runners = append(p.runners, p.engine.Run)
	if p.leader == nil {
		p.engine.SetAsker(p.job)
		p.runners = append(p.runners, func(ctx context.Context) { p.job.Run(ctx, 0) })
	} else {
		p.engine.SetAsker(leader.Asker{Node: p.leader, Local: p.job})
		p.runners = append(p.runners, func(ctx context.Context) { p.leader.Run(ctx, p.job.Run) })
	}
	ok = true
	return p, nil
}

// run starts the background work; it ends when ctx does.
func (p *parts) run(ctx context.Context, wg *sync.WaitGroup) {
	for _, r := range p.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r(ctx)
		}()
	}
}

// close releases the parts in reverse order of creation. The apps themselves keep
// running: visitors of awake apps must not pay for a gateway restart.
func (p *parts) close() {
	if err := closeAll(p.closers); err != nil {
		p.log.Warn("closing failed", "err", err)
	}
}

// closeAll calls closers in reverse order, all of them, and returns their errors
// joined.
func closeAll(closers []func() error) error {
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i]())
	}
	return errors.Join(errs...)
}

// inPeers reports whether this node is one of the configured cluster peers.
func inPeers(cfg *config.Config) bool {
	for _, p := range cfg.Cluster.Peers {
		if p.ID == cfg.Node.ID {
			return true
		}
	}
	return false
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/metrics"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud"
	"github.com/reapergw/reaper/paas/docker"
	"github.com/reapergw/reaper/paas/kubernetes"
	"github.com/reapergw/reaper/paas/multi"
	"github.com/reapergw/reaper/paas/process"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/ratelimit"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/reaper/valkeystore"
	"github.com/reapergw/reaper/trigger"
	"github.com/reapergw/reaper/webhook"
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
	// multi is driver when paas.driver lists several (nil otherwise); clever is
	// the Clever Cloud driver when it is one of them (nil otherwise).
	multi  *multi.Client
	clever *clevercloud.Client
	engine *reaper.Engine
	job    *reaper.Job
	// webhooks queues the events of events.webhooks and delivers them (on the
	// leader); nil without webhooks.
	webhooks *webhook.Service
	leader   *leader.Node // nil on a single node
	// clusterTLS is the cluster's mutual TLS, which the admin listener serves
	// too; nil without cluster.tls.
	clusterTLS *leader.TLS
	metrics    *metrics.Metrics
	log        *slog.Logger
	// triggers runs the wake triggers (the polling ones on the leader, the
	// listening ones on every node); endpoint answers the producers' calls on
	// the gateway listener (nil without a token trigger).
	triggers *trigger.Runner
	endpoint *trigger.Endpoint
	// doors is the budget of failed attempts at the admin token per client
	// that the admin API, the dashboard's sign-in and the preview share.
	doors *ratelimit.Failures

	closers []func() error
	runners []func(ctx context.Context)
}

// buildParts builds the parts in order, each step from what the previous ones
// built. When a step fails, what the earlier steps opened is closed again.
func buildParts(ctx context.Context, cfg *config.Config, logger *slog.Logger) (_ *parts, err error) {
	p := &parts{log: logger, metrics: metrics.New(string(cfg.PaaS.Driver)), doors: ratelimit.NewDoors(logger)}
	for _, w := range cfg.Warnings() {
		p.log.Warn(w) // what `reaper check` warns of
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	steps := []func(context.Context, *config.Config) error{
		p.openStore,
		p.openDriver,
		p.buildWebhooks,
		p.buildEngine,
		p.buildTriggers,
		p.joinCluster,
		p.buildJob,
		p.applyDryRun,
	}
	for _, step := range steps {
		if err := step(ctx, cfg); err != nil {
			return nil, err
		}
	}
	p.wireJob()
	return p, nil
}

// openStore opens the datastore: in memory with a state file, or Valkey.
func (p *parts) openStore(ctx context.Context, cfg *config.Config) error {
	switch cfg.Store.Driver {
	case config.StoreMemory:
		ms, err := reaper.NewMemStore(reaper.MemStoreOptions{
			Path:   filepath.Join(cfg.Node.DataDir, "state.json"),
			Logger: p.log.With("part", "store"),
		})
		if err != nil {
			return fmt.Errorf("store: %w", err)
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
			Logger:   p.log.With("part", "store"),
			OnError:  p.metrics.StoreError,
		})
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		p.store = vs
		p.closers = append(p.closers, vs.Close)
	}
	return nil
}

// openDriver opens the platform driver, or the drivers of a list behind one
// paas/multi client.
func (p *parts) openDriver(_ context.Context, cfg *config.Config) error {
	if !cfg.PaaS.Driver.Multi() {
		d, err := p.openOne(cfg, string(cfg.PaaS.Driver))
		if d != nil {
			p.driver = d
		}
		return err
	}
	var drivers []multi.Driver
	// Declared apps before discovered ones: an id that a docker label claims
	// too stays the process driver's. Clever Cloud last: it claims any app_….
	for _, name := range []string{config.DriverProcess, config.DriverDocker, config.DriverKubernetes, config.DriverCleverCloud} {
		if !cfg.PaaS.Driver.Has(name) {
			continue
		}
		d, err := p.openOne(cfg, name)
		if err != nil {
			return err
		}
		drivers = append(drivers, multi.Driver{Name: name, Client: d})
	}
	p.multi = multi.New(p.log.With("part", "paas"), drivers...)
	p.driver = p.multi
	return nil
}

// ownedClient is a driver that tells its apps.
type ownedClient interface {
	paas.Client
	paas.Owner
}

// openOne opens one driver; what it must close goes to p.closers.
func (p *parts) openOne(cfg *config.Config, name string) (ownedClient, error) {
	switch name {
	case config.DriverProcess:
		d, err := process.New(process.Options{DataDir: cfg.Node.DataDir, Apps: cfg.PaaS.Apps, Logger: p.log.With("part", "process")})
		if err != nil {
			return nil, fmt.Errorf("paas: %w", err)
		}
		p.closers = append(p.closers, d.Close)
		return d, nil
	case config.DriverCleverCloud:
		d, err := clevercloud.New(*cfg.PaaS.CleverCloud, clevercloud.Options{Logger: p.log.With("part", "clevercloud"), Version: version})
		if err != nil {
			return nil, fmt.Errorf("paas.clevercloud: %w", err)
		}
		p.clever = d
		return d, nil
	case config.DriverKubernetes:
		var kc kubernetes.Config
		if cfg.PaaS.Kubernetes != nil {
			kc = *cfg.PaaS.Kubernetes
		}
		d, err := kubernetes.New(kubernetes.Options{Config: kc, Logger: p.log.With("part", "kubernetes"), UserAgent: "reaper/" + version})
		if err != nil {
			return nil, fmt.Errorf("paas.kubernetes: %w", err)
		}
		p.closers = append(p.closers, d.Close)
		return d, nil
	case config.DriverDocker:
		var dc docker.Config
		if cfg.PaaS.Docker != nil {
			dc = *cfg.PaaS.Docker
		}
		d, err := docker.New(docker.Options{Config: dc, Logger: p.log.With("part", "docker"), UserAgent: "reaper/" + version})
		if err != nil {
			return nil, fmt.Errorf("paas.docker: %w", err)
		}
		p.closers = append(p.closers, d.Close)
		return d, nil
	}
	return nil, nil
}

// buildWebhooks builds the webhooks of events.webhooks, if any: every node
// queues the events that happen on it, the leader delivers them.
func (p *parts) buildWebhooks(_ context.Context, cfg *config.Config) error {
	if len(cfg.Events.Webhooks) == 0 {
		return nil
	}
	p.webhooks = webhook.New(webhook.Options{
		Hooks:          cfg.Events.Webhooks,
		AlertWakeAfter: cfg.Events.AlertWakeAfter.D(),
		Queue:          p.store,
		Logger:         p.log.With("part", "webhook"),
		Observer:       p.metrics,
		UserAgent:      "reaper/" + version,
	})
	names := make([]string, 0, len(cfg.Events.Webhooks))
	for i := range cfg.Events.Webhooks {
		names = append(names, cfg.Events.Webhooks[i].ResolvedName())
	}
	p.metrics.WatchWebhooks(names)
	return nil
}

// buildEngine builds the reaper engine, which the reaper plugins of every route
// share.
func (p *parts) buildEngine(_ context.Context, cfg *config.Config) error {
	opts := reaper.EngineOptions{
		Node:       cfg.Node.ID,
		Store:      p.store,
		Logger:     p.log.With("part", "reaper"),
		ReadyDelay: 3 * time.Second,
		GuessAppID: config.GuessAppID,
		MaxHeld:    nodeMaxHeld(cfg.Reaper.MaxHeld),
		Observer:   p.metrics,
		AdminToken: cfg.Node.AdminToken,
		Failures:   p.doors,
		// Wakes are not free: per client address and per node (wakelimit.go).
		MaxWakesPerClient: cfg.Node.MaxWakesPerClient,
		MaxWakesPerMinute: cfg.Node.MaxWakesPerMinute,
	}
	if p.webhooks != nil {
		opts.Notifier = p.webhooks
	}
	if h, ok := p.driver.(paas.PolicyHinter); ok {
		opts.Policies = h // a container's reaper.grace_period
	}
	if w, ok := p.driver.(paas.ReadinessWaiter); ok {
		opts.Readiness = w // no probe of an app in Error
	}
	if !cfg.PaaS.Driver.Has(config.DriverCleverCloud) {
		opts.ReadyDelay = 0 // readiness is probed: up means answering
	} else if p.multi != nil {
		m := p.multi // a probed driver's app needs no wait, a Clever Cloud app one
		opts.ReadyDelayFor = func(appID string) time.Duration {
			if m.DriverOf(appID) == config.DriverCleverCloud {
				return opts.ReadyDelay
			}
			return 0
		}
	}
	if cc := p.clever; cc != nil {
		opts.NotReadyYet = clevercloud.IsNotReadyYet
		// A route that names no app and has no app-<uuid>.cleverapps.io
		// target serves the app whose vhosts include its domains.
		opts.FindApp = func(ctx context.Context, r *plugin.RouteConfig) (string, error) {
			return cc.FindApp(ctx, r.Frontend.Domains)
		}
	}
	p.engine = reaper.NewEngine(opts)
	p.engine.SetTopology(topology(cfg))
	p.runners = append(p.runners, p.engine.Run)
	return nil
}

// buildTriggers builds the wake triggers: the polling ones run on the leader
// (whileLeader), the listening ones (postgres_notify) on every node for its
// whole life (a NOTIFY is not kept while nobody listens: a change of leader
// must not lose one), the producer endpoint on every node's gateway listener.
func (p *parts) buildTriggers(_ context.Context, cfg *config.Config) error {
	p.triggers = trigger.New(trigger.Options{
		Triggers: cfg.Triggers, Waker: p.engine, Observer: p.metrics, Logger: p.log.With("part", "trigger"),
		Node: cfg.Node.ID,
	})
	p.runners = append(p.runners, p.triggers.Listen)
	trusted := cfg.Node.TrustedProxiesPrefixes()
	p.endpoint = trigger.NewEndpoint(p.triggers, trigger.EndpointOptions{
		ClientKey: func(r *http.Request) string { return ratelimit.Key(plugin.ClientIP(r, trusted)) },
		Logger:    p.log.With("part", "trigger"),
		// The gateway's logger (serve.go): the calls' access lines beside its requests'.
		AccessLog: p.log, TrustedProxies: trusted,
	})
	ids := make([]string, len(cfg.Triggers))
	for i, c := range cfg.Triggers {
		ids[i] = c.ID
	}
	p.metrics.WatchTriggers(ids)
	return nil
}

// topology is what the engine takes of groups[] and of the apps' depends_on.
func topology(cfg *config.Config) reaper.Topology {
	deps := cfg.DependsOn()
	return reaper.Topology{Groups: cfg.ReaperGroups(), DependsOn: func(id string) []string { return deps[id] }}
}

// joinCluster starts this node's Raft member, when the configuration names a
// cluster, with its TLS when cluster.tls is set.
func (p *parts) joinCluster(_ context.Context, cfg *config.Config) error {
	c := cfg.Cluster
	if c == nil {
		return nil
	}
	warnPlaintextCluster(p.log, cfg)
	if c.TLS != nil {
		t, err := leader.LoadTLS(c.TLS.Cert, c.TLS.Key, c.TLS.CA)
		if err != nil {
			var errs conf.Errors
			errs.AddError("cluster.tls", err)
			return errs.Err()
		}
		p.clusterTLS = t
	}
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
		TLS:        p.clusterTLS,
		DataDir:    cfg.Node.DataDir,
		Logger:     p.log.With("part", "raft"),

		HeartbeatTimeout:   c.HeartbeatTimeout.D(),
		ElectionTimeout:    c.ElectionTimeout.D(),
		LeaderLeaseTimeout: c.LeaderLeaseTimeout.D(),
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	p.leader = ln
	if !inPeers(cfg) {
		p.log.Warn("this node is not in cluster.peers: it does not bootstrap a cluster and waits to be added (reaper cluster join)", "node", cfg.Node.ID)
	}
	p.closers = append(p.closers, ln.Shutdown)
	return nil
}

// buildJob builds the job that starts and stops the apps. In a cluster, only the
// leader runs it, and its writes are fenced by the leader's term.
func (p *parts) buildJob(_ context.Context, cfg *config.Config) error {
	opts := reaper.JobOptions{
		Engine:       p.engine,
		Store:        p.store,
		PaaS:         p.driver,
		Logger:       p.log.With("part", "job"),
		FastInterval: cfg.Reaper.FastInterval.D(),
		FullInterval: cfg.Reaper.JobInterval.D(),
	}
	if p.leader != nil {
		opts.Fence = p.leader
		// Other nodes see a WaitingForShutdown through the store's notification
		// (or their next poll) and flush their traffic at once: give them that.
		opts.SettleDelay = settleDelay
	}
	p.job = reaper.NewJob(opts)
	return nil
}

// applyDryRun turns the store's dry run on when the configuration asks for it.
// It never turns it off: an operator may have set it through the admin API.
func (p *parts) applyDryRun(ctx context.Context, cfg *config.Config) error {
	if !cfg.Reaper.DryRun {
		return nil
	}
	// Keep whatever else an operator set (the kill switch).
	s, err := p.store.Settings(ctx)
	if err == nil && !s.DryRun {
		s.DryRun = true
		err = p.store.PutSettings(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// wireJob sends the engine's wake asks to the job, and runs the job and the
// webhooks' deliveries: on a single node, always; in a cluster, while this node
// leads, with asks forwarded to the leader by the others.
func (p *parts) wireJob() {
	if p.leader == nil {
		p.engine.SetAsker(p.job)
		p.runners = append(p.runners, func(ctx context.Context) { p.whileLeader(ctx, 0) })
		return
	}
	p.engine.SetAsker(leader.Asker{Node: p.leader, Local: p.job})
	p.runners = append(p.runners, func(ctx context.Context) { p.leader.Run(ctx, p.whileLeader) })
}

// whileLeader is the leader's work for one term: the job, the webhooks'
// deliveries and the polling wake triggers. It returns once all have.
func (p *parts) whileLeader(ctx context.Context, term uint64) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if p.webhooks != nil {
		wg.Go(func() { p.webhooks.Run(ctx) })
	}
	wg.Go(func() { p.triggers.Run(ctx) })
	p.job.Run(ctx, term)
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

// checkKube asks the cluster of the kubernetes driver, when the file uses it,
// for HorizontalPodAutoscalers that would undo a sleep. It only warns: a
// cluster that cannot be reached from here (or refuses the list) leaves the
// file's check as it was, after a few seconds at most.
func checkKube(cfg *config.Config, env func(string) (string, bool), stdout io.Writer) {
	if !cfg.PaaS.Driver.Has(config.DriverKubernetes) {
		return
	}
	var kc kubernetes.Config
	if cfg.PaaS.Kubernetes != nil {
		kc = *cfg.PaaS.Kubernetes
	}
	ws := kubernetes.CheckHPAs(context.Background(), kubernetes.Options{Config: kc, Lookup: env, UserAgent: "reaper/" + version})
	for _, w := range ws {
		fmt.Fprintln(stdout, "warning: paas.kubernetes: "+w)
	}
	if len(ws) == 0 {
		fmt.Fprintln(stdout, "note: paas.kubernetes: the cluster was asked: no HorizontalPodAutoscaler with minReplicas ≥ 1 targets an app's workload")
	}
}

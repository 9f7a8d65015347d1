package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reapergw/reaper/autotls"
	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/forwardauth"
	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/logbuf"
	"github.com/reapergw/reaper/plugin"
	_ "github.com/reapergw/reaper/plugin/builtin" // the headers and ip_filter plugins
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/tcproute"
)

func serveCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlags("serve", "serve --config FILE [--log-format text|json] [--log-level debug|info|warn|error]", stdout, stderr)
	path := fs.String("config", "", "the configuration file (required)")
	format := fs.String("log-format", "text", "log format: text or json")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *path == "" {
		fmt.Fprintln(stderr, "reaper serve: --config is required")
		return exitCode(2)
	}
	// Log lines are gathered and written every 100 ms: an access line per request
	// then costs a copy, not a system call on the request's path.
	logOut := logbuf.New(stderr, 100*time.Millisecond, 64<<10)
	defer logOut.Close()
	logger, err := newLogger(logOut, *format, *level)
	if err != nil {
		fmt.Fprintln(stderr, "reaper serve:", err)
		return exitCode(2)
	}
	defer logThroughSlog(logger)()
	cfg, err := loadConfig(*path, env)
	if err != nil {
		printConfigErrors(stderr, *path, err)
		return exitCode(1)
	}
	inherited, err := inheritedSockets(env, os.Getpid())
	if err != nil {
		return err
	}
	n, err := startNode(ctx, cfg, logger, inherited)
	if err != nil {
		return err
	}
	n.configPath, n.env = *path, env

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			n.reload()
		case err := <-n.failed:
			n.shutdown()
			return err
		case <-ctx.Done():
			logger.Info("shutting down: draining in-flight requests", "timeout", cfg.Node.ShutdownTimeout.D())
			n.shutdown()
			logger.Info("stopped")
			return nil
		}
	}
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q is not a level (use debug, info, warn or error)", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q is not a format (use text or json)", format)
}

// logThroughSlog makes logger the process's default, so that what the standard
// library writes with the log package (net/http's Transport: "Unsolicited
// response received on idle HTTP channel", …) goes through the node's handler,
// as JSON with --log-format json, rather than raw on stderr. The returned function
// puts back what was there before: tests run several nodes in one process.
func logThroughSlog(logger *slog.Logger) (restore func()) {
	prev, out, flags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(logger)
	return func() {
		slog.SetDefault(prev)
		// SetDefault leaves the log package's output as it is when prev is
		// slog's own default handler (which writes through that output).
		log.SetOutput(out)
		log.SetFlags(flags)
	}
}

func loadConfig(path string, env func(string) (string, bool)) (*config.Config, error) {
	return config.Load(path, env)
}

// printConfigErrors prints every problem of a configuration, one per line.
func printConfigErrors(w io.Writer, path string, err error) {
	var list conf.List
	if !errors.As(err, &list) {
		fmt.Fprintf(w, "%s: %v\n", path, err)
		return
	}
	noun := "problems"
	if len(list) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(w, "%s: %d %s:\n", path, len(list), noun)
	for _, e := range list {
		fmt.Fprintf(w, "  %s\n", e.Error())
	}
}

// node is one running reaper: its parts and listeners.
type node struct {
	cfg        *config.Config
	configPath string
	env        func(string) (string, bool)
	log        *slog.Logger

	parts      *parts
	gateway    *plugin.Gateway
	transports *plugin.Transports
	gwServer   *http.Server
	admin      *http.Server
	// auth and authServer: the forward-auth listener (node.auth_listen), an
	// access-only gateway on the same routes; nil when off.
	auth       *plugin.Gateway
	authServer *http.Server
	ready      *readiness

	// With node.tls.acme: the certificates' manager, the server of its
	// http_listen, and what to close when the node stops.
	acme        *autotls.Manager
	acmeHTTP    *http.Server
	acmeClosers []func() error

	// unlockData lets go of node.data_dir (lockDataDir), last at shutdown.
	unlockData func()

	// tcp serves tcp_routes (nil without any); tcpStop ends it.
	tcp     *tcproute.Server
	tcpStop func()

	bgCancel context.CancelFunc
	bg       sync.WaitGroup
	failed   chan error
	reloadMu sync.Mutex
}

// startNode builds every part from the configuration and starts listening. When it
// returns without error the gateway serves; when it fails, what it had built is
// closed again, in reverse order.
func startNode(ctx context.Context, cfg *config.Config, logger *slog.Logger, inherited sockets) (_ *node, err error) {
	if err := os.MkdirAll(cfg.Node.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("node.data_dir: %w", err)
	}
	unlock, err := lockDataDir(cfg.Node.DataDir)
	if err != nil {
		return nil, err
	}
	n := &node{cfg: cfg, log: logger, failed: make(chan error, 2), ready: &readiness{}, unlockData: unlock}
	closers := []func() error{func() error { unlock(); return nil }}
	defer func() {
		if err != nil {
			_ = closeAll(closers)
		}
	}()

	if n.parts, err = buildParts(ctx, cfg, logger); err != nil {
		return nil, err
	}
	closers = append(closers, func() error { n.parts.close(); return nil })
	n.transports = plugin.NewTransports()
	router, err := plugin.BuildRouter(ctx, cfg.Routes, n.buildOptions())
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() error { router.Close(); return nil })
	n.gateway = plugin.NewGateway(plugin.GatewayOptions{
		Logger:          logger,
		Node:            cfg.Node.ID,
		TrustedProxies:  cfg.Node.TrustedProxiesPrefixes(),
		Observer:        n.parts.metrics,
		BodyIdleTimeout: cfg.Node.BodyIdleTimeout.D(),
	})
	n.gateway.Swap(router)
	if cfg.Node.AuthListen != "" {
		n.auth = plugin.NewGateway(plugin.GatewayOptions{
			Logger: logger.With("listener", "auth"), Node: cfg.Node.ID, TrustedProxies: n.authTrusted(),
			Observer: n.parts.metrics, AccessOnly: true,
		})
		n.auth.Swap(router)
	}
	n.watchMetrics()

	gwLn, adminLn, httpLn, err := n.listeners(inherited)
	if err != nil {
		return nil, err
	}
	if err := n.listenTCP(ctx); err != nil {
		return nil, err
	}
	closers = append(closers, func() error { n.stopTCP(); return nil })
	closers = append(closers, gwLn.Close)
	if adminLn != nil {
		closers = append(closers, adminLn.Close)
	}
	var authLn net.Listener
	if n.auth != nil {
		if authLn, err = net.Listen("tcp", cfg.Node.AuthListen); err != nil {
			return nil, fmt.Errorf("node.auth_listen: %w", err)
		}
		closers = append(closers, authLn.Close)
	}
	tlsConfig, err := loadTLS(cfg.Node.TLS)
	if err != nil {
		return nil, err
	}
	var acmeLn net.Listener
	if a := acmeOf(cfg); a != nil {
		closers = append(closers, func() error { n.stopACME(); return nil })
		if acmeLn, err = n.startACME(a, httpLn, gwLn.Addr().String()); err != nil {
			return nil, err
		}
		tlsConfig = n.acme.TLSConfig()
	}

	bgCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.bgCancel = cancel
	n.parts.run(bgCtx, &n.bg)
	n.serveGateway(gwLn, tlsConfig)
	n.serveTCP()
	if acmeLn != nil {
		n.serveACME(acmeLn)
	}
	if adminLn != nil {
		n.serveAdmin(adminLn)
	}
	if authLn != nil {
		n.serveAuth(authLn)
	}
	n.ready.set(true)
	logger.Info("reaper started", "node", cfg.Node.ID, "routes", len(cfg.Routes), "driver", cfg.PaaS.Driver, "store", cfg.Store.Driver, "data_dir", filepath.Clean(cfg.Node.DataDir))
	return n, nil
}

// listeners opens the gateway's and the admin API's listeners, and with
// node.tls.acme the http_listen one, or takes them from the inherited sockets;
// either way all are open, or none.
func (n *node) listeners(inherited sockets) (gw, admin, acmeHTTP net.Listener, err error) {
	defer func() {
		for name, ln := range inherited {
			n.log.Warn("a socket from the service manager is not used: nothing listens as "+name, "addr", ln.Addr().String())
		}
		inherited.close()
	}()
	defer func() {
		if err != nil {
			for _, ln := range []net.Listener{gw, admin} {
				if ln != nil {
					ln.Close()
				}
			}
		}
	}()
	if gw, err = n.listen(inherited, socketGateway, n.cfg.Node.Listen, "node.listen"); err != nil {
		return
	}
	if inherited[socketAdmin] != nil || n.cfg.Node.AdminListen != "" {
		if admin, err = n.listen(inherited, socketAdmin, n.cfg.Node.AdminListen, "node.admin_listen"); err != nil {
			return
		}
	}
	if a := acmeOf(n.cfg); a != nil {
		acmeHTTP, err = n.listen(inherited, socketHTTP, a.HTTPListen, "node.tls.acme.http_listen")
	}
	return
}

// listen takes the inherited socket of that name, or opens one on addr; field
// names the setting in errors.
func (n *node) listen(inherited sockets, name, addr, field string) (net.Listener, error) {
	ln, fromManager, err := inherited.listen(name, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if fromManager {
		n.log.Info(name+" socket from the service manager", "addr", ln.Addr().String())
	}
	return ln, nil
}

// loadTLS returns the gateway's TLS configuration from node.tls's files, or nil
// when node.tls is not set or its certificates come from a CA (startACME).
func loadTLS(t *config.TLS) (*tls.Config, error) {
	if t == nil || t.ACME != nil {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, fmt.Errorf("node.tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// serveGateway serves the routes on ln, over TLS when tlsConfig is set.
func (n *node) serveGateway(ln net.Listener, tlsConfig *tls.Config) {
	n.gwServer = &http.Server{
		Handler:           n.parts.endpoint.Wrap(n.gateway),
		ReadHeaderTimeout: n.cfg.Node.ReadHeaderTimeout.D(),
		IdleTimeout:       n.cfg.Node.IdleTimeout.D(),
		MaxHeaderBytes:    n.cfg.Node.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelDebug),
	}
	// Held HTTP/1 requests wait without a goroutine, and are served again by the
	// same server when their app is up.
	n.gateway.EnableParking(n.gwServer)
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
		n.gwServer.TLSConfig = tlsConfig // ServeTLS turns HTTP/2 on for it
	}
	n.serve(n.gwServer, ln, "gateway", scheme)
}

// authTrusted is node.auth_trusted_proxies, loopback when empty.
func (n *node) authTrusted() []netip.Prefix {
	if p := n.cfg.Node.AuthTrustedPrefixes(); len(p) > 0 {
		return p
	}
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// authRoutes are the routes in force (they follow reloads).
func (n *node) authRoutes() []*plugin.Route {
	if r := n.auth.Router(); r != nil {
		return r.Routes()
	}
	return nil
}

// serveAuth serves the forward-auth listener on ln.
func (n *node) serveAuth(ln net.Listener) {
	n.authServer = &http.Server{
		Handler: forwardauth.New(n.auth, forwardauth.Options{
			Trusted: n.authTrusted(), HoldMax: n.cfg.Node.AuthHoldMax.D(), Logger: n.log,
			Routes:        n.authRoutes,
			TraefikRoutes: n.cfg.Node.AuthTraefikRoutes,
			// Routes whose app's container asks for Traefik (reaper.traefik).
			TraefikLabeled: n.authTraefikLabeled,
			AuthURL:        cmp.Or(n.cfg.Node.AuthURL, "http://"+ln.Addr().String()),
		}),
		ReadHeaderTimeout: n.cfg.Node.ReadHeaderTimeout.D(),
		IdleTimeout:       n.cfg.Node.IdleTimeout.D(),
		MaxHeaderBytes:    n.cfg.Node.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelDebug),
	}
	n.serve(n.authServer, ln, "auth", "http")
}

// serveAdmin serves health, the admin API and the cluster's internal calls on ln,
// over HTTPS with the node's certificate when the cluster has TLS.
func (n *node) serveAdmin(ln net.Listener) {
	api := n.adminAPI()
	n.admin = &http.Server{
		Handler: adminHandler(n.cfg.Node.AdminToken, n.ready, api, n.internal(), n.parts.metrics.Handler(),
			n.cfg.Node.MetricsPublic, n.dashboard(api)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelDebug),
	}
	scheme := "http"
	if t := n.parts.clusterTLS; t != nil {
		// /internal/ then also needs a client certificate of the cluster's CA
		// (leader.API.Internal); operators and /healthz need none.
		n.admin.TLSConfig, scheme = t.AdminConfig(), "https"
	}
	n.serve(n.admin, ln, "admin", scheme)
	if !n.cfg.Node.AdminToken.IsSet() {
		n.log.Warn("the admin API is off: node.admin_token is not set; the admin listener serves /healthz and /readyz only")
	}
}

func (n *node) serve(srv *http.Server, ln net.Listener, name, scheme string) {
	n.log.Info(name+" listening", "addr", ln.Addr().String(), "scheme", scheme)
	go func() {
		var err error
		if srv.TLSConfig != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.failed <- fmt.Errorf("%s listener: %w", name, err)
		}
	}()
}

// internal returns the handler of the cluster's internal calls, or nil on a single
// node.
func (n *node) internal() http.Handler {
	if n.parts.leader == nil {
		return nil
	}
	return n.clusterAPI().Internal()
}

func (n *node) buildOptions() plugin.BuildOptions {
	return plugin.BuildOptions{
		Logger:     n.log,
		Services:   map[string]any{reaper.ServiceName: n.parts.engine},
		Transports: n.transports,
	}
}

// reload re-reads the configuration file and swaps the routes and their plugins in
// one step, without dropping a connection. An invalid file changes nothing: the
// running configuration stays and every problem is logged.
func (n *node) reload() {
	n.reloadMu.Lock()
	defer n.reloadMu.Unlock()
	n.log.Info("reloading the configuration", "file", n.configPath)
	cfg, err := loadConfig(n.configPath, n.env)
	if err != nil {
		var list conf.List
		if errors.As(err, &list) {
			for _, e := range list {
				n.log.Error("configuration problem", "file", n.configPath, "at", e.Path, "problem", e.Msg)
			}
		} else {
			n.log.Error("configuration not reloaded", "file", n.configPath, "err", err)
		}
		n.log.Error("the configuration was not reloaded: the running one stays", "problems", max(len(list), 1))
		return
	}
	for _, change := range restartNeeded(n.cfg, cfg) {
		n.log.Warn("this change takes effect at the next restart", "setting", change)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	router, err := plugin.BuildRouter(ctx, cfg.Routes, n.buildOptions())
	if err != nil {
		n.log.Error("the configuration was not reloaded: the running one stays", "err", err)
		return
	}
	old := n.gateway.Swap(router)
	if n.auth != nil {
		n.auth.Swap(router) // the same router: closed once, as the gateway's
	}
	if old != nil {
		old.Close()
	}
	n.cfg.Routes = cfg.Routes
	n.parts.engine.SetTopology(topology(cfg)) // groups[] are applied live
	n.cfg.Groups = cfg.Groups
	if n.acme != nil {
		n.acme.SetHosts(routeDomains(cfg.Routes))
	}
	n.log.Info("configuration reloaded", "routes", len(cfg.Routes))
}

// shutdown stops accepting, answers held requests, drains in-flight requests up to
// node.shutdown_timeout, then stops the background work and saves the state.
func (n *node) shutdown() {
	n.ready.set(false)
	n.parts.engine.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Node.ShutdownTimeout.D())
	defer cancel()
	// Held requests get their answers (the engine's shutdown answers them); the
	// parked ones go back to the server, which then drains them with the rest.
	if err := n.gateway.Drain(ctx); err != nil {
		n.log.Warn("parked requests were not all answered: the shutdown timeout passed", "parked", n.gateway.Parked())
	}
	if err := n.gwServer.Shutdown(ctx); err != nil {
		n.log.Warn("in-flight requests were cut: the shutdown timeout passed", "timeout", n.cfg.Node.ShutdownTimeout.D())
		n.gwServer.Close()
	}
	if n.authServer != nil {
		if err := n.authServer.Shutdown(ctx); err != nil {
			n.authServer.Close()
		}
	}
	// Held connections were told (the engine's shutdown); spliced ones are cut:
	// a TCP stream has no end to wait for, and its client reconnects.
	n.stopTCP()
	n.stopACME()
	if n.admin != nil {
		actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.admin.Shutdown(actx)
		acancel()
	}
	n.bgCancel()
	n.bg.Wait()
	if n.auth != nil {
		n.auth.Swap(nil)
	}
	if r := n.gateway.Swap(nil); r != nil {
		r.Close()
	}
	n.parts.close()
	n.unlockData()
}

// readiness is what /readyz reports.
type readiness struct{ ok atomic.Bool }

func (r *readiness) set(ok bool) { r.ok.Store(ok) }

func (r *readiness) check() error {
	if !r.ok.Load() {
		return errors.New("not serving (starting or shutting down)")
	}
	return nil
}

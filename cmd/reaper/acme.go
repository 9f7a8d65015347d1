package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/reapergw/reaper/acmestore"
	"github.com/reapergw/reaper/autotls"
	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/reaper/valkeystore"
)

// acmeOf returns node.tls.acme, or nil when the gateway gets no certificate
// from a CA.
func acmeOf(cfg *config.Config) *config.ACME {
	if cfg.Node.TLS == nil {
		return nil
	}
	return cfg.Node.TLS.ACME
}

// startACME opens node.tls.acme.http_listen and builds the certificate manager
// on the node's store (n.acme): Valkey in a cluster, files under
// <data_dir>/acme on a single node. ln is the http_listen listener, gateway the
// gateway listener's address.
// What it opened is in n.acmeClosers, also when it fails.
func (n *node) startACME(a *config.ACME, ln net.Listener, gateway string) (net.Listener, error) {
	n.acmeClosers = append(n.acmeClosers, func() error {
		if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
			return err // the server's Shutdown closed it already, usually
		}
		return nil
	})
	storage, err := n.acmeStorage()
	if err != nil {
		return nil, err
	}
	opts := autotls.Options{
		CA: a.CA, Email: a.Email, Storage: storage,
		HTTP01: a.Has(config.ChallengeHTTP01), TLSALPN01: a.Has(config.ChallengeTLSALPN),
		HTTPAddr: a.HTTPListen, TLSAddr: gateway,
		Logger: n.log.With("part", "acme"),
	}
	if a.CARoot != "" {
		if opts.Roots, err = loadRoots(a.CARoot); err != nil {
			return nil, err
		}
	}
	if od := a.OnDemand; od != nil {
		opts.OnDemand, opts.Ask, opts.Allow = true, od.Ask, od.Allow
	}
	m, err := autotls.New(opts)
	if err != nil {
		return nil, fmt.Errorf("node.tls.acme: %w", err)
	}
	n.acme = m
	n.acmeClosers = append(n.acmeClosers, func() error { m.Stop(); return nil })
	return ln, nil
}

// acmeStorage is where certificates, accounts and locks live: beside the
// cluster's state in Valkey, under the store's prefix and "acme/", so that
// every node serves the same certificate and one node obtains it; in files
// under the data directory on a single node.
func (n *node) acmeStorage() (certmagic.Storage, error) {
	vs, ok := n.parts.store.(*valkeystore.Store)
	if !ok {
		return &certmagic.FileStorage{Path: filepath.Join(n.cfg.Node.DataDir, "acme")}, nil
	}
	prefix := n.cfg.Store.Prefix
	if prefix == "" {
		prefix = valkeystore.DefaultPrefix
	}
	s, err := acmestore.New(acmestore.Options{Client: vs.Client(), Prefix: prefix + "acme/", Logger: n.log.With("part", "acme")})
	if err != nil {
		return nil, err
	}
	// Before the store closes its client: stop refreshing the locks.
	n.acmeClosers = append(n.acmeClosers, func() error { s.Close(); return nil })
	return s, nil
}

// loadRoots reads node.tls.acme.ca_root.
func loadRoots(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("node.tls.acme.ca_root: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("node.tls.acme.ca_root: %q holds no PEM certificate", file)
	}
	return pool, nil
}

// routeDomains are the domains of the enabled routes, whose hosts get
// certificates.
func routeDomains(routes []plugin.RouteConfig) []string {
	var out []string
	for _, r := range routes {
		if r.Enabled {
			out = append(out, r.Frontend.Domains...)
		}
	}
	return out
}

// serveACME serves the challenges and the redirects to https on ln, and starts
// managing the routes' certificates in the background.
func (n *node) serveACME(ln net.Listener) {
	n.acmeHTTP = &http.Server{
		Handler:           n.acme.HTTPHandler(),
		ReadHeaderTimeout: n.cfg.Node.ReadHeaderTimeout.D(),
		IdleTimeout:       n.cfg.Node.IdleTimeout.D(),
		MaxHeaderBytes:    n.cfg.Node.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelDebug),
	}
	n.serve(n.acmeHTTP, ln, "acme http", "http")
	n.acme.SetHosts(routeDomains(n.cfg.Routes))
}

// stopACME stops the challenges' listener and the certificates' background work.
func (n *node) stopACME() {
	if n.acmeHTTP != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.acmeHTTP.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.acmeHTTP.Close()
		}
		cancel()
	}
	if err := closeAll(n.acmeClosers); err != nil {
		n.log.Warn("closing the certificates' manager failed", "err", err)
	}
	n.acmeClosers = nil
}

// Package autotls is reaper's automatic HTTPS (node.tls.acme, docs/tls.md): it
// obtains certificates from an ACME CA for the exact hosts of the routes, and
// for names of wildcard routes that on_demand allows, at their first handshake;
// it serves them on the gateway, answers the CA's HTTP-01 and TLS-ALPN-01
// challenges, renews in the background, and redirects plain HTTP to HTTPS.
//
// The ACME work is certmagic's (github.com/caddyserver/certmagic): both
// challenges, background renewal with OCSP stapling, on-demand issuance behind
// a decision function, and a Storage whose locks let the nodes of a cluster
// share one certificate per name (acmestore). Which names get one is decided
// here, by Policy, a pure function of the routes and the on_demand rules.
package autotls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
)

// Options configures New.
type Options struct {
	// CA is the URL of the ACME directory. Required.
	CA string
	// Roots are the roots that sign the CA directory's HTTPS certificate; nil:
	// the system's.
	Roots *x509.CertPool
	// Email goes with the ACME account; optional.
	Email string
	// HTTP01 and TLSALPN01 are the challenges the CA may use; one at least.
	HTTP01, TLSALPN01 bool
	// HTTPAddr is the address of the listener that serves HTTPHandler, TLSAddr
	// that of the gateway, which serves TLSConfig. certmagic tries to listen on
	// them itself when it presents a challenge, and leaves them to their
	// listeners when it finds them taken (as they are while the node serves).
	HTTPAddr, TLSAddr string
	// Storage keeps certificates, keys, accounts and locks. Required.
	Storage certmagic.Storage
	// OnDemand turns on-demand issuance on for names of wildcard routes; Ask
	// (a URL) and Allow (host patterns) say which. See Policy.
	OnDemand bool
	Ask      string
	Allow    []string
	// Logger receives the issuances, renewals and failures, by domain; default
	// discard.
	Logger *slog.Logger
	// CertWait bounds how long a handshake for a managed name waits for its
	// first certificate; default 20 s.
	CertWait time.Duration
	// AskTimeout bounds a call to Ask; default 10 s.
	AskTimeout time.Duration
	// RenewCheckInterval is how often the certificates are checked for renewal;
	// default certmagic's (10 minutes). Tests shorten it.
	RenewCheckInterval time.Duration
}

// DefaultCertWait is the default of Options.CertWait.
const DefaultCertWait = 20 * time.Second

// acmeTLS1 is the ALPN protocol of TLS-ALPN-01 challenges (RFC 8737).
const acmeTLS1 = "acme-tls/1"

// Manager manages the certificates of one node. Its methods are safe for
// concurrent use.
type Manager struct {
	opts  Options
	log   *slog.Logger
	rules *OnDemandRules
	asker *asker // nil without Ask

	cache *certmagic.Cache
	// managed obtains the exact hosts at once and renews them on a timer;
	// onDemand (nil without OnDemand) obtains at the first handshake.
	managed, onDemand *certmagic.Config
	issuer            *certmagic.ACMEIssuer // managed's: answers HTTP-01

	policy atomic.Pointer[Policy]
	cached signal // fired each time a managed certificate enters the cache
	mu     sync.Mutex

	ctx    context.Context // ends with Stop: certmagic's background work
	cancel context.CancelFunc
}

// New builds the manager. It makes no network call: SetHosts starts the work.
func New(opts Options) (*Manager, error) {
	if opts.CA == "" || opts.Storage == nil {
		return nil, errors.New("autotls: a CA and a storage are required")
	}
	if !opts.HTTP01 && !opts.TLSALPN01 {
		return nil, errors.New("autotls: no challenge is on")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.CertWait <= 0 {
		opts.CertWait = DefaultCertWait
	}
	m := &Manager{opts: opts, log: opts.Logger}
	if opts.OnDemand {
		m.rules = &OnDemandRules{Ask: opts.Ask != "", Allow: opts.Allow}
		if opts.Ask != "" {
			a, err := newAsker(opts.Ask, opts.AskTimeout)
			if err != nil {
				return nil, err
			}
			m.asker = a
		}
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	zl := zapLogger(m.log.Handler())
	m.cache = certmagic.NewCache(certmagic.CacheOptions{GetConfigForCert: m.configFor, Logger: zl, RenewCheckInterval: opts.RenewCheckInterval})
	m.managed, m.issuer = m.newConfig(zl, nil)
	if opts.OnDemand {
		m.onDemand, _ = m.newConfig(zl, &certmagic.OnDemandConfig{DecisionFunc: m.decideOnDemand})
	}
	m.policy.Store(NewPolicy(nil, m.rules))
	return m, nil
}

// newConfig makes a certmagic configuration on the shared cache, with its own
// ACME issuer (certmagic ties an issuer to one configuration).
func (m *Manager) newConfig(zl *zap.Logger, od *certmagic.OnDemandConfig) (*certmagic.Config, *certmagic.ACMEIssuer) {
	cfg := certmagic.New(m.cache, certmagic.Config{
		Storage: m.opts.Storage, Logger: zl, OnDemand: od,
		OnEvent: m.onEvent, ShouldEmitFunc: shouldEmit,
	})
	host, httpPort := splitPort(m.opts.HTTPAddr)
	_, tlsPort := splitPort(m.opts.TLSAddr)
	iss := certmagic.NewACMEIssuer(cfg, certmagic.ACMEIssuer{
		CA: m.opts.CA, Email: m.opts.Email, Agreed: true, TrustedRoots: m.opts.Roots,
		DisableHTTPChallenge: !m.opts.HTTP01, DisableTLSALPNChallenge: !m.opts.TLSALPN01,
		ListenHost: host, AltHTTPPort: httpPort, AltTLSALPNPort: tlsPort,
		Logger: zl,
	})
	cfg.Issuers = []certmagic.Issuer{iss}
	return cfg, iss
}

func splitPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

// SetHosts makes the routes' domains the ones served: the exact hosts not yet
// managed are obtained (or loaded from the storage) in the background; those no
// longer in the routes leave the cache, and their renewals stop. It returns at
// once. Call it at start and at each reload.
func (m *Manager) SetHosts(domains []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.policy.Load()
	p := NewPolicy(domains, m.rules)
	m.policy.Store(p)
	var added []string
	for _, h := range p.Managed() {
		if !old.exact[h] {
			added = append(added, h)
		}
	}
	var removed []certmagic.SubjectIssuer
	for _, h := range old.Managed() {
		if !p.exact[h] {
			removed = append(removed, certmagic.SubjectIssuer{Subject: h})
		}
	}
	if len(removed) > 0 {
		m.cache.RemoveManaged(removed)
	}
	if skipped := p.Skipped(); len(skipped) > 0 && !slices.Equal(skipped, old.Skipped()) {
		m.log.Info("no certificate for these hosts of the routes: no ACME CA issues for IP addresses or localhost names", "hosts", skipped)
	}
	if len(added) == 0 {
		return
	}
	m.log.Info("managing certificates", "domains", added)
	if err := m.managed.ManageAsync(m.ctx, added); err != nil {
		m.log.Error("certificates not managed", "domains", added, "err", err)
	}
}

// TLSConfig is the gateway's TLS configuration: certificates by SNI, HTTP/2,
// and the ALPN protocol of TLS-ALPN-01 challenges.
func (m *Manager) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: m.getCertificate,
		NextProtos:     []string{"h2", "http/1.1", acmeTLS1},
	}
}

// HTTPHandler serves node.tls.acme.http_listen: HTTP-01 challenges, and a 308
// to https for every other request.
func (m *Manager) HTTPHandler() http.Handler { return httpHandler(m.issuer.HandleHTTPChallenge) }

// Stop ends the background work: obtaining, renewals, the cache's maintenance.
// Locks held by work in progress are released by that work as it ends.
func (m *Manager) Stop() {
	m.cancel()
	m.cache.Stop()
}

// getCertificate chooses a handshake's certificate: a challenge's, a managed
// host's (waiting up to CertWait for the first one), an on-demand name's
// (obtained now if on_demand allows it), or none.
func (m *Manager) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acmeTLS1 {
		return m.managed.GetCertificate(hello)
	}
	v, why := m.policy.Load().Decide(hello.ServerName)
	switch v {
	case Managed:
		return m.waitManaged(hello)
	case OnDemand, Ask:
		return m.onDemand.GetCertificate(hello)
	}
	m.log.Debug("TLS handshake refused: no certificate for the name", "server_name", hello.ServerName, "why", why)
	return nil, fmt.Errorf("autotls: no certificate for %q: %s", hello.ServerName, why)
}

// waitManaged returns the certificate of a managed host, waiting for it while
// it is being obtained (the background work at start), up to CertWait or the
// end of the handshake's context.
func (m *Manager) waitManaged(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	ctx, cancel := context.WithTimeout(hello.Context(), m.opts.CertWait)
	defer cancel()
	for {
		changed := m.cached.C()
		cert, err := m.managed.GetCertificateWithContext(ctx, hello)
		if err == nil {
			return cert, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("autotls: no certificate for %q after %v: %w", hello.ServerName, m.opts.CertWait, err)
		}
	}
}

// decideOnDemand is certmagic's on-demand decision: nil lets it obtain a
// certificate for name.
func (m *Manager) decideOnDemand(ctx context.Context, name string) error {
	v, why := m.policy.Load().Decide(name)
	switch v {
	case Managed, OnDemand:
		return nil
	case Ask:
		err := m.asker.allow(ctx, name)
		if err != nil {
			m.log.Debug("on-demand certificate refused", "domain", name, "err", err)
		}
		return err
	}
	return errors.New(why)
}

// configFor is the cache's GetConfigForCert: managed hosts renew on a timer,
// on-demand names at their handshakes.
func (m *Manager) configFor(cert certmagic.Certificate) (*certmagic.Config, error) {
	p := m.policy.Load()
	if m.onDemand == nil || slices.ContainsFunc(cert.Names, func(n string) bool { return p.exact[n] }) {
		return m.managed, nil
	}
	return m.onDemand, nil
}

// shouldEmit keeps certmagic from building the events that onEvent ignores (one
// per handshake, among others).
func shouldEmit(event string) bool {
	switch event {
	case "cert_obtaining", "cert_obtained", "cert_failed", "cached_managed_cert", "cert_ocsp_revoked":
		return true
	}
	return false
}

// onEvent logs certmagic's outcomes by domain (never a key or a CSR), and wakes
// the handshakes that wait for a managed certificate.
func (m *Manager) onEvent(_ context.Context, event string, data map[string]any) error {
	domain, _ := data["identifier"].(string)
	renewal, _ := data["renewal"].(bool)
	switch event {
	case "cert_obtaining":
		m.log.Debug("obtaining a certificate", "domain", domain, "renewal", renewal)
	case "cert_obtained":
		msg := "certificate obtained"
		if renewal {
			msg = "certificate renewed"
		}
		m.log.Info(msg, "domain", domain, "issuer", data["issuer"])
	case "cert_failed":
		err, _ := data["error"].(error)
		m.log.Error("certificate not obtained: certmagic tries again later", "domain", domain, "renewal", renewal, "err", err)
	case "cert_ocsp_revoked":
		m.log.Warn("certificate revoked (OCSP): it is replaced", "domains", data["subjects"])
	case "cached_managed_cert":
		m.cached.fire()
	}
	return nil
}

// signal wakes every waiter at once, as often as it fires: C returns a
// channel that the next fire closes.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

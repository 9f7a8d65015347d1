// Package config reads reaper's configuration file: one YAML document whose keys
// are documented in docs/configuration.md. Every problem is reported at once, each
// with the path of the field and what was expected; `reaper check` prints them.
package config

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/paas/clevercloud"
	"github.com/reapergw/reaper/paas/docker"
	"github.com/reapergw/reaper/paas/kubernetes"
	"github.com/reapergw/reaper/paas/process"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/tcproute"
	"github.com/reapergw/reaper/trigger"
	"github.com/reapergw/reaper/webhook"
)

// Config is the whole file.
type Config struct {
	Node    Node                 `yaml:"node"`
	Reaper  Reaper               `yaml:"reaper"`
	PaaS    PaaS                 `yaml:"paas"`
	Store   Store                `yaml:"store"`
	Cluster *Cluster             `yaml:"cluster"`
	Routes  []plugin.RouteConfig `yaml:"routes"`
	Events  Events               `yaml:"events"`
	// TCPRoutes are ports that wake their app on a connection (package tcproute).
	TCPRoutes []tcproute.Config `yaml:"tcp_routes"`
	// Triggers wake apps that no request wakes (package trigger).
	Triggers []trigger.Config `yaml:"triggers"`
	// Groups are apps that wake together and sleep together (groups.go).
	Groups []Group `yaml:"groups"`

	// routeBusy are the busy_urls the routes give each app, and where, as the
	// checks found them (for Warnings).
	routeBusy busyURLs
}

// Node is this copy of reaper: where it listens and keeps its data.
type Node struct {
	ID          string      `yaml:"id"`
	Listen      string      `yaml:"listen"`
	AdminListen string      `yaml:"admin_listen"`
	AdminToken  conf.Secret `yaml:"admin_token"`
	DataDir     string      `yaml:"data_dir"`
	TLS         *TLS        `yaml:"tls"`
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM.
	ShutdownTimeout conf.Duration `yaml:"shutdown_timeout"`
	// TrustedProxies are the peers (IPs or CIDRs) whose X-Forwarded-For and
	// X-Forwarded-Proto the gateway believes.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// ReadHeaderTimeout bounds how long a client may take to send its headers.
	ReadHeaderTimeout conf.Duration `yaml:"read_header_timeout"`
	// BodyIdleTimeout bounds each wait for the next bytes of a request body.
	BodyIdleTimeout conf.Duration `yaml:"body_idle_timeout"`
	// IdleTimeout closes client keep-alive connections idle this long.
	IdleTimeout conf.Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes bounds the size of a request's headers.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MetricsPublic serves /metrics on the admin listener without the admin
	// token (for a Prometheus that cannot send one).
	MetricsPublic bool `yaml:"metrics_public"`
	// MaxWakesPerClient bounds the wakes one client address (an IPv6 /64) may
	// start per minute on this node; MaxWakesPerMinute those of every client
	// together. 0: no such bound.
	MaxWakesPerClient int `yaml:"max_wakes_per_client"`
	MaxWakesPerMinute int `yaml:"max_wakes_per_minute"`
	// AuthListen is the forward-auth listener (package forwardauth): proxies
	// the user runs ask it before each request. Empty: off.
	AuthListen string `yaml:"auth_listen"`
	// AuthTrustedProxies are the peers (IPs or CIDRs) allowed to call it.
	// Empty: loopback only.
	AuthTrustedProxies []string `yaml:"auth_trusted_proxies"`
	// AuthHoldMax bounds how long an auth call is held while its app wakes.
	AuthHoldMax conf.Duration `yaml:"auth_hold_max"`
	// AuthURL is the listener's URL as proxies reach it (Traefik's forwardAuth
	// address). Default: http:// and auth_listen.
	AuthURL string `yaml:"auth_url"`
	// AuthTraefikRoutes are the ids of the routes /traefik gives Traefik.
	AuthTraefikRoutes []string `yaml:"auth_traefik_routes"`

	trusted     []netip.Prefix
	authTrusted []netip.Prefix
}

// TLS turns on HTTPS (and HTTP/2) on the gateway listener, with a certificate
// from files (Cert, Key) or from an ACME CA (ACME), never both.
type TLS struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	ACME *ACME  `yaml:"acme"`
}

// Reaper tunes the job.
type Reaper struct {
	JobInterval  conf.Duration `yaml:"job_interval"`
	FastInterval conf.Duration `yaml:"fast_interval"`
	// DryRun starts the node with the dry-run setting on (decisions are logged, no
	// app is stopped) unless the store already holds settings.
	DryRun bool `yaml:"dry_run"`
	// MaxHeld bounds the requests this node holds for all apps together; 0 means
	// half the process's open-file limit (each held request keeps a connection).
	MaxHeld int `yaml:"max_held"`
}

// PaaS chooses and configures the platform drivers: one, or several side by
// side, each app owned by one of them.
type PaaS struct {
	Driver      Drivers             `yaml:"driver"`
	Apps        []process.AppConfig `yaml:"apps"`
	CleverCloud *clevercloud.Config `yaml:"clevercloud"`
	Docker      *docker.Config      `yaml:"docker"`
	Kubernetes  *kubernetes.Config  `yaml:"kubernetes"`
}

// Store chooses where shared state lives.
type Store struct {
	Driver   string      `yaml:"driver"`
	Address  string      `yaml:"address"`
	Username string      `yaml:"username"`
	Password conf.Secret `yaml:"password"`
	TLS      bool        `yaml:"tls"`
	Prefix   string      `yaml:"prefix"`
}

// Cluster makes this node one of several.
type Cluster struct {
	RaftListen string `yaml:"raft_listen"`
	// Advertise is the Raft address the other nodes dial, when raft_listen is not
	// it (0.0.0.0:7000 behind a host address). Default: this node's raft_addr in
	// peers, else raft_listen.
	Advertise string      `yaml:"advertise"`
	Secret    conf.Secret `yaml:"secret"`
	Peers     []Peer      `yaml:"peers"`
	// TLS encrypts Raft and the internal API with mutual TLS, and puts the
	// admin listener on HTTPS. Without it, both travel in plaintext.
	TLS *ClusterTLS `yaml:"tls"`
	// Raft's timeouts (docs/cluster.md#raft-timeouts); zero: leader's defaults,
	// the election and lease following the heartbeat when only it is given.
	HeartbeatTimeout   conf.Duration `yaml:"heartbeat_timeout"`
	ElectionTimeout    conf.Duration `yaml:"election_timeout"`
	LeaderLeaseTimeout conf.Duration `yaml:"leader_lease_timeout"`
}

// ClusterTLS is the cluster's mutual TLS: this node's certificate and key, and
// the CAs that sign the certificate of every node. Checked when the file is
// loaded, as the node will use it (config/check.go).
type ClusterTLS struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	CA   string `yaml:"ca"`
}

// Events says whom to tell what happens to the apps (docs/webhooks.md).
type Events struct {
	// AlertWakeAfter: a wake that takes longer is a slow_wake event; 0: none.
	AlertWakeAfter conf.Duration `yaml:"alert_wake_after"`
	// Webhooks receive the events.
	Webhooks []webhook.Config `yaml:"webhooks"`
}

// Validate checks the webhooks together (each checked itself already).
func (e *Events) Validate(path string, errs *conf.Errors) {
	webhook.Check(e.Webhooks, e.AlertWakeAfter.D(), conf.Key(path, "webhooks"), errs)
}

// Peer is one member of the cluster.
type Peer struct {
	ID       string `yaml:"id" json:"id"`
	RaftAddr string `yaml:"raft_addr" json:"raft_addr"`
	APIAddr  string `yaml:"api_addr" json:"api_addr"`
}

// Drivers.
const (
	DriverProcess     = "process"
	DriverCleverCloud = "clevercloud"
	DriverDocker      = "docker"
	DriverKubernetes  = "kubernetes"
	StoreMemory       = "memory"
	StoreValkey       = "valkey"
)

// DefaultMaxWakesPerClient is node.max_wakes_per_client when the file does
// not set it: far above what a person wakes (a wake is per app, and a request
// for an app already waking or up never counts), far below what a script
// that walks every app of a gateway asks (docs/operations.md, "Wake limits").
const DefaultMaxWakesPerClient = 30

// Default returns a Config with every default set, as an empty file gives.
func Default() Config {
	host, _ := os.Hostname()
	return Config{
		Node: Node{
			ID:                host,
			Listen:            "127.0.0.1:8080",
			AdminListen:       "127.0.0.1:9090",
			DataDir:           "./data",
			ShutdownTimeout:   conf.Duration(30 * time.Second),
			ReadHeaderTimeout: conf.Duration(10 * time.Second),
			BodyIdleTimeout:   conf.Duration(60 * time.Second),
			IdleTimeout:       conf.Duration(120 * time.Second),
			MaxHeaderBytes:    64 << 10,
			MaxWakesPerClient: DefaultMaxWakesPerClient,
			AuthHoldMax:       conf.Duration(25 * time.Second),
		},
		Reaper: Reaper{
			JobInterval:  conf.Duration(30 * time.Second),
			FastInterval: conf.Duration(5 * time.Second),
		},
		PaaS:  PaaS{Driver: DriverProcess},
		Store: Store{Driver: StoreMemory, Prefix: "reaper:"},
	}
}

// Load reads and checks the file at path. env looks up ${VAR} references (nil:
// the process environment). The error, if any, lists every problem.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, env)
}

// Parse checks a configuration given as bytes; see Load.
func Parse(data []byte, env func(string) (string, bool)) (*Config, error) {
	n, err := conf.Parse(data)
	if err != nil {
		return nil, err
	}
	cfg := Default()
	var errs conf.Errors
	d := &conf.Decoder{Env: env}
	d.Decode(n, &cfg, "", &errs)
	cfg.check(d, &errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// AuthTrustedPrefixes returns node.auth_trusted_proxies parsed (empty:
// loopback only).
func (n *Node) AuthTrustedPrefixes() []netip.Prefix { return n.authTrusted }

// TrustedProxiesPrefixes returns node.trusted_proxies parsed.
func (n *Node) TrustedProxiesPrefixes() []netip.Prefix { return n.trusted }

// Validate checks the node section.
func (n *Node) Validate(path string, errs *conf.Errors) {
	if n.ID == "" {
		errs.Add(conf.Key(path, "id"), "is required (the host name could not be read)")
	}
	checkAddr(n.Listen, conf.Key(path, "listen"), errs)
	if n.AdminListen != "" {
		checkAddr(n.AdminListen, conf.Key(path, "admin_listen"), errs)
	}
	if n.DataDir == "" {
		errs.Add(conf.Key(path, "data_dir"), "is required")
	}
	if n.MaxHeaderBytes < 1024 {
		errs.Add(conf.Key(path, "max_header_bytes"), "must be at least 1024")
	}
	if n.ReadHeaderTimeout <= 0 {
		errs.Add(conf.Key(path, "read_header_timeout"), "must be more than 0")
	}
	if n.BodyIdleTimeout <= 0 {
		errs.Add(conf.Key(path, "body_idle_timeout"), "must be more than 0")
	}
	for _, f := range []struct {
		key string
		n   int
	}{{"max_wakes_per_client", n.MaxWakesPerClient}, {"max_wakes_per_minute", n.MaxWakesPerMinute}} {
		if f.n < 0 {
			errs.Add(conf.Key(path, f.key), "must be 0 (no limit) or a number of wakes a minute, not %d", f.n)
		}
	}
	n.trusted = n.trusted[:0]
	for i, s := range n.TrustedProxies {
		p, err := plugin.ParseAddrOrPrefix(s)
		if err != nil {
			errs.Add(conf.Index(conf.Key(path, "trusted_proxies"), i), "%s", err.Error())
			continue
		}
		n.trusted = append(n.trusted, p)
	}
	n.validateAuth(path, errs)
}

// validateAuth checks the forward-auth listener's settings.
func (n *Node) validateAuth(path string, errs *conf.Errors) {
	if n.AuthListen != "" {
		checkAddr(n.AuthListen, conf.Key(path, "auth_listen"), errs)
	}
	if n.AuthURL != "" {
		if u, err := url.Parse(n.AuthURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Add(conf.Key(path, "auth_url"), "%s is not an http:// or https:// URL", strconv.Quote(n.AuthURL))
		}
	}
	if n.AuthHoldMax <= 0 {
		errs.Add(conf.Key(path, "auth_hold_max"), "must be more than 0")
	}
	n.authTrusted = n.authTrusted[:0]
	for i, s := range n.AuthTrustedProxies {
		p, err := plugin.ParseAddrOrPrefix(s)
		if err != nil {
			errs.Add(conf.Index(conf.Key(path, "auth_trusted_proxies"), i), "%s", err.Error())
			continue
		}
		n.authTrusted = append(n.authTrusted, p)
	}
}

// Validate checks the TLS section.
func (t *TLS) Validate(path string, errs *conf.Errors) {
	if t.ACME != nil {
		for _, f := range []struct{ key, file string }{{"cert", t.Cert}, {"key", t.Key}} {
			if f.file != "" {
				errs.Add(conf.Key(path, f.key), "cannot be used with %s: the certificates come from files or from the CA, not both", conf.Key(path, "acme"))
			}
		}
		return
	}
	// In the file's order, so that the errors always come in the same order.
	for _, f := range []struct{ key, file string }{{"cert", t.Cert}, {"key", t.Key}} {
		key, file := f.key, f.file
		if file == "" {
			errs.Add(conf.Key(path, key), "is required with tls (or acme, for certificates from an ACME CA)")
		} else if _, err := os.Stat(file); err != nil {
			errs.Add(conf.Key(path, key), "%s", conf.Unreadable(file, err))
		}
	}
}

// Validate checks the job's timings.
func (r *Reaper) Validate(path string, errs *conf.Errors) {
	if r.JobInterval < conf.Duration(time.Second) {
		errs.Add(conf.Key(path, "job_interval"), "must be at least 1s")
	}
	if r.FastInterval < conf.Duration(100*time.Millisecond) {
		errs.Add(conf.Key(path, "fast_interval"), "must be at least 100ms")
	}
	if r.MaxHeld < 0 {
		errs.Add(conf.Key(path, "max_held"), "must be 0 (half the open-file limit) or more, not %d", r.MaxHeld)
	}
}

// Validate checks the store section.
func (s *Store) Validate(path string, errs *conf.Errors) {
	switch s.Driver {
	case StoreMemory:
	case StoreValkey:
		if s.Address == "" {
			errs.Add(conf.Key(path, "address"), "is required with the valkey store (host:port)")
		} else {
			checkAddr(s.Address, conf.Key(path, "address"), errs)
		}
	default:
		errs.Add(conf.Key(path, "driver"), "%s is not a store (use memory or valkey)", strconv.Quote(s.Driver))
	}
}

// Validate checks the cluster section.
func (c *Cluster) Validate(path string, errs *conf.Errors) {
	if c.RaftListen == "" {
		errs.Add(conf.Key(path, "raft_listen"), "is required")
	} else {
		checkAddr(c.RaftListen, conf.Key(path, "raft_listen"), errs)
	}
	if len(c.Secret.Reveal()) < 16 {
		errs.Add(conf.Key(path, "secret"), "must be at least 16 characters (every node shares it)")
	}
	if c.Advertise != "" {
		checkAddr(c.Advertise, conf.Key(path, "advertise"), errs)
	}
	c.validateTimeouts(path, errs)
	seen := map[string]bool{}
	for i, p := range c.Peers {
		pp := conf.Index(conf.Key(path, "peers"), i)
		if p.ID == "" {
			errs.Add(conf.Key(pp, "id"), "is required")
		} else if seen[p.ID] {
			errs.Add(conf.Key(pp, "id"), "%s is listed twice", strconv.Quote(p.ID))
		}
		seen[p.ID] = true
		checkAddr(p.RaftAddr, conf.Key(pp, "raft_addr"), errs)
		checkAddr(p.APIAddr, conf.Key(pp, "api_addr"), errs)
	}
}

// checkAddr checks a host:port listen or dial address.
func checkAddr(s, path string, errs *conf.Errors) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		errs.Add(path, "%s is not an address (write host:port, such as 127.0.0.1:8080 or :8080)", strconv.Quote(s))
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		errs.Add(path, "%s has no valid port", strconv.Quote(s))
	}
	if strings.ContainsAny(host, " /") {
		errs.Add(path, "%s has no valid host", strconv.Quote(s))
	}
}

// Bounds of the Raft timeouts: below the lower one, Raft refuses to run (or a
// machine's hiccup is an election); above the upper one a bare number was
// likely meant in milliseconds ("500" is 500 s).
const (
	minRaftTimeout = 10 * time.Millisecond
	maxRaftTimeout = time.Minute
)

// validateTimeouts checks the Raft timeouts as the node will use them (zeros
// filled as leader.Timeouts does): each in bounds, the lease not past the
// heartbeat, the election not under it.
func (c *Cluster) validateTimeouts(path string, errs *conf.Errors) {
	given := []struct {
		key string
		d   time.Duration
	}{{"heartbeat_timeout", c.HeartbeatTimeout.D()}, {"election_timeout", c.ElectionTimeout.D()}, {"leader_lease_timeout", c.LeaderLeaseTimeout.D()}}
	ok := true
	for _, g := range given {
		switch {
		case g.d == 0:
		case g.d < minRaftTimeout:
			errs.Add(conf.Key(path, g.key), "%s is under %s (0 or absent: the default)", g.d, minRaftTimeout)
			ok = false
		case g.d > maxRaftTimeout:
			errs.Add(conf.Key(path, g.key), "%s is over %s: a bare number is seconds (write 500ms for milliseconds)", g.d, maxRaftTimeout)
			ok = false
		}
	}
	if !ok {
		return
	}
	hb, el, lease := leader.Timeouts(c.HeartbeatTimeout.D(), c.ElectionTimeout.D(), c.LeaderLeaseTimeout.D())
	if lease > hb {
		errs.Add(conf.Key(path, "leader_lease_timeout"), "%s must not exceed the heartbeat timeout (%s): a leader must hear from a majority within its lease", lease, hb)
	}
	if el < hb {
		errs.Add(conf.Key(path, "election_timeout"), "%s must not be under the heartbeat timeout (%s)", el, hb)
	}
}

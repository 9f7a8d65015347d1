package probe

import (
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// Defaults and bounds of a probe's configuration.
const (
	// DefaultInterval is the steady interval, reached 4.6 s after a start (Interval).
	DefaultInterval = 25 * time.Millisecond
	// MinInterval keeps a typo (1ns) from turning the probe into a busy loop.
	MinInterval = 5 * time.Millisecond
)

// Config is the readiness probe of an app (its ready: key): exactly one of TCP,
// HTTP, Postgres or Redis.
type Config struct {
	// TCP (host:port): ready once a TCP connection is accepted.
	TCP string `yaml:"tcp"`
	// HTTP (URL): ready once a GET answers with a status below 500. Redirects are
	// not followed (a 3xx counts as ready).
	HTTP string `yaml:"http"`
	// Postgres (host:port): ready once the server answers a startup message with
	// an authentication request or an error other than 57P03 (starting up,
	// shutting down, in recovery), as pg_isready does. The probe hangs up before
	// authenticating.
	Postgres string `yaml:"postgres"`
	// Redis (host:port): ready once PING answers PONG (after AUTH when Password is
	// set); -LOADING (loading its data set) is not ready.
	Redis string `yaml:"redis"`
	// Username is the user of a redis probe's AUTH (Redis 6 ACLs), or the user
	// named in a postgres probe's startup message (default postgres).
	Username string `yaml:"username"`
	// Password is sent by a redis probe's AUTH before its PING: a server with
	// requirepass answers NOAUTH to anything else, even while loading. It is
	// never written to a log or an error.
	Password string `yaml:"password"`
	// Interval is the steady interval between two probes while the app starts,
	// reached a few seconds after the start: the probes of the first second come
	// every 2 ms, then less and less often (see Interval). 0 means
	// DefaultInterval.
	Interval conf.Duration `yaml:"interval"`
}

// Check checks the probe; path names it (paas.apps[0].ready). It is not named
// Validate on purpose: the configuration decoder calls Validate only on mappings it
// decoded, and an absent ready: must be reported too, once, by the app that owns
// it.
func (r *Config) Check(path string, errs *conf.Errors) {
	given := 0
	for _, v := range []string{r.TCP, r.HTTP, r.Postgres, r.Redis} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		errs.Add(path, "give exactly one of tcp, http, postgres or redis")
	}
	for _, a := range [...]struct{ key, v string }{{"tcp", r.TCP}, {"postgres", r.Postgres}, {"redis", r.Redis}} {
		if a.v != "" && !hostPort(a.v) {
			errs.Add(conf.Key(path, a.key), "%s is not host:port (e.g. 127.0.0.1:3001)", strconv.Quote(a.v))
		}
	}
	if r.HTTP != "" {
		u, err := url.Parse(r.HTTP)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			shown := r.HTTP
			if err == nil {
				shown = u.Redacted() // a password in the URL is not quoted
			}
			errs.Add(conf.Key(path, "http"), "%s is not an http(s) URL", strconv.Quote(shown))
		}
	}
	if r.Password != "" && r.Redis == "" {
		errs.Add(conf.Key(path, "password"), "only a redis probe sends a password")
	}
	if r.Username != "" && r.Redis == "" && r.Postgres == "" {
		errs.Add(conf.Key(path, "username"), "only a redis or postgres probe names a user")
	}
	if r.Username != "" && r.Redis != "" && r.Password == "" {
		errs.Add(conf.Key(path, "username"), "a redis username goes with a password (AUTH username password)")
	}
	if iv := r.Interval.D(); iv != 0 && iv < MinInterval {
		errs.Add(conf.Key(path, "interval"), "%s is too short (at least %s)", iv, MinInterval)
	}
}

func hostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	n, perr := strconv.Atoi(port)
	return err == nil && host != "" && perr == nil && n >= 1 && n <= 65535
}

// Notes are what a checked configuration should still be told about the probe,
// for reaper check: a redis probe without a password cannot tell a loading
// server from a ready one when the server requires a password.
func (r *Config) Notes() []string {
	if r.Redis != "" && r.Password == "" {
		return []string{"redis " + r.Redis + " without a password: if the server requires one (requirepass, ACL), it answers NOAUTH and the app never turns ready: set ready.password"}
	}
	return nil
}

// Set reports whether a probe is configured.
func (r *Config) Set() bool { return r.Kind() != "" }

// Kind names the probe: tcp, http, postgres, redis, or "" when none is given.
func (r *Config) Kind() string {
	switch {
	case r.TCP != "":
		return "tcp"
	case r.HTTP != "":
		return "http"
	case r.Postgres != "":
		return "postgres"
	case r.Redis != "":
		return "redis"
	}
	return ""
}

// Addr is the host:port a tcp, postgres or redis probe connects to; "" for an
// http probe.
func (r *Config) Addr() string {
	switch {
	case r.TCP != "":
		return r.TCP
	case r.Postgres != "":
		return r.Postgres
	}
	return r.Redis
}

// At is a copy of the probe that connects to addr instead (a container's own
// address rather than the port it publishes); an http probe is returned as is.
func (r *Config) At(addr string) *Config {
	c := *r
	switch {
	case r.TCP != "":
		c.TCP = addr
	case r.Postgres != "":
		c.Postgres = addr
	case r.Redis != "":
		c.Redis = addr
	}
	return &c
}

// Steady is the configured steady interval, or DefaultInterval.
func (r *Config) Steady() time.Duration {
	if iv := r.Interval.D(); iv > 0 {
		return iv
	}
	return DefaultInterval
}

// Target is what the probe reaches, for messages: a password in the URL is masked.
func (r *Config) Target() string {
	if r.HTTP == "" {
		return r.Addr()
	}
	if u, err := url.Parse(r.HTTP); err == nil {
		return u.Redacted()
	}
	return r.HTTP
}

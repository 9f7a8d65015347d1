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

// Config is the readiness probe of an app (its ready: key): exactly one of TCP or
// HTTP.
type Config struct {
	// TCP (host:port): ready once a TCP connection is accepted.
	TCP string `yaml:"tcp"`
	// HTTP (URL): ready once a GET answers with a status below 500. Redirects are
	// not followed (a 3xx counts as ready).
	HTTP string `yaml:"http"`
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
	if (r.TCP == "") == (r.HTTP == "") {
		errs.Add(path, "give exactly one of tcp or http")
	}
	if r.TCP != "" {
		host, port, err := net.SplitHostPort(r.TCP)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			errs.Add(conf.Key(path, "tcp"), "%s is not host:port (e.g. 127.0.0.1:3001)", strconv.Quote(r.TCP))
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
	if iv := r.Interval.D(); iv != 0 && iv < MinInterval {
		errs.Add(conf.Key(path, "interval"), "%s is too short (at least %s)", iv, MinInterval)
	}
}

// Set reports whether a probe is configured (tcp or http given).
func (r *Config) Set() bool { return r.TCP != "" || r.HTTP != "" }

// Steady is the configured steady interval, or DefaultInterval.
func (r *Config) Steady() time.Duration {
	if iv := r.Interval.D(); iv > 0 {
		return iv
	}
	return DefaultInterval
}

// Target is what the probe reaches, for messages: a password in the URL is masked.
func (r *Config) Target() string {
	if r.TCP != "" {
		return r.TCP
	}
	if u, err := url.Parse(r.HTTP); err == nil {
		return u.Redacted()
	}
	return r.HTTP
}

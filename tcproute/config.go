package tcproute

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/reaper"
)

// Modes of a TCP route: what it does with a connection on which no byte flows.
const (
	// ModeRequestResponse closes a connection byte-idle for
	// connection_idle_timeout: a pool's idle connections would otherwise keep
	// the app awake forever; the pool reconnects on its next query.
	ModeRequestResponse = "request_response"
	// ModeKeepConnections never closes a quiet connection (LISTEN/NOTIFY,
	// pub/sub, MQTT): the app sleeps once the last one closes.
	ModeKeepConnections = "keep_connections"
)

// DefaultMaxHeld bounds the connections held for a route's app on one node.
const DefaultMaxHeld = reaper.DefaultMaxHeld

// Config is one TCP route (tcp_routes[] in the file): a port that belongs to an
// app for its whole life. The policy keys are those of an HTTP route's reaper
// plugin, where they make sense.
type Config struct {
	// ID names the route (logs, metrics, the app's routes).
	ID string `yaml:"id"`
	// Listen is the host:port reaper accepts the app's connections on.
	Listen string `yaml:"listen"`
	// AppID is the app woken by a connection.
	AppID string `yaml:"app_id"`
	// Target is the app's own host:port, dialled once it is up.
	Target string `yaml:"target"`
	// Mode is request_response (default) or keep_connections.
	Mode string `yaml:"mode"`
	// ConnectionIdleTimeout closes a connection on which no byte flowed for
	// that long, in request_response mode. Default: the grace period.
	ConnectionIdleTimeout conf.Duration `yaml:"connection_idle_timeout"`
	// GracePeriod is how long the app must go unused before it sleeps
	// (default 1h, as HTTP routes).
	GracePeriod conf.Duration `yaml:"grace_period"`
	// FailTimeout bounds a start and each held connection (default 15m).
	FailTimeout conf.Duration `yaml:"fail_timeout"`
	// MaxHeld bounds the connections held for the app on this node (default
	// 1,000); past it a connection is closed at once.
	MaxHeld int `yaml:"max_held"`
	// ReadyDelay is how long held connections wait after the app is up; unset:
	// the driver's default (0 for probed apps).
	ReadyDelay *conf.Duration `yaml:"ready_delay"`
	// MustBeUpAt lists windows during which the app is kept awake.
	MustBeUpAt []reaper.RangeConfig `yaml:"must_be_up_at"`
	// Timezone is the IANA zone of the windows (default Europe/Paris).
	Timezone string `yaml:"timezone"`
	// Prewake is "learn" to start the app before the visits that recur.
	Prewake string `yaml:"prewake"`

	policy reaper.Config // built by Validate
}

// Validate checks the route on its own and builds its policy; the configuration
// decoder calls it for each tcp_routes[] item, path naming it (tcp_routes[0]).
// The checks across routes (a port used twice, an unknown app) are CheckAll's.
func (c *Config) Validate(path string, errs *conf.Errors) {
	if c.ID == "" {
		errs.Add(conf.Key(path, "id"), "is required")
	}
	if c.AppID == "" {
		errs.Add(conf.Key(path, "app_id"), "is required")
	}
	checkAddr(c.Listen, conf.Key(path, "listen"), true, errs)
	checkAddr(c.Target, conf.Key(path, "target"), false, errs)
	switch c.Mode {
	case "", ModeRequestResponse, ModeKeepConnections:
	default:
		errs.Add(conf.Key(path, "mode"), "%s is not a mode (use request_response or keep_connections)", strconv.Quote(c.Mode))
	}
	if c.ConnectionIdleTimeout < 0 {
		errs.Add(conf.Key(path, "connection_idle_timeout"), "must be 0 (the grace period) or more")
	}
	if c.Mode == ModeKeepConnections && c.ConnectionIdleTimeout > 0 {
		errs.Add(conf.Key(path, "connection_idle_timeout"), "is not used in keep_connections mode: a quiet connection stays open")
	}
	p := reaper.DefaultConfig()
	p.AppID = c.AppID
	set(&p.GracePeriod, c.GracePeriod)
	set(&p.FailTimeout, c.FailTimeout)
	if c.MaxHeld != 0 {
		p.MaxHeld = c.MaxHeld
	}
	p.ReadyDelay = c.ReadyDelay
	p.MustBeUpAt = c.MustBeUpAt
	if c.Timezone != "" {
		p.Timezone = c.Timezone
	}
	p.Prewake = c.Prewake
	p.Validate(path, errs) // its keys are ours: the paths name this route's fields
	c.policy = p
}

// set sets *d to v unless v is 0 (the default stays); a negative v is set, for
// reaper.Config.Validate to refuse.
func set(d *conf.Duration, v conf.Duration) {
	if v != 0 {
		*d = v
	}
}

func checkAddr(s, path string, listen bool, errs *conf.Errors) {
	if s == "" {
		errs.Add(path, "is required")
		return
	}
	host, port, err := net.SplitHostPort(s)
	n, perr := strconv.Atoi(port)
	// Port 0 (any free port) is for tests: the log says which was taken.
	if err != nil || perr != nil || n < 0 || n > 65535 || (!listen && (host == "" || n == 0)) {
		errs.Add(path, "%s is not host:port (e.g. 127.0.0.1:5432)", strconv.Quote(s))
	}
}

// Policy is the route's policy as the Engine takes it (Validate builds it).
func (c *Config) Policy() *reaper.Config { return &c.policy }

// IdleTimeout is how long a connection may stay byte-idle before it is closed; 0
// for never (keep_connections).
func (c *Config) IdleTimeout() time.Duration {
	if c.Mode == ModeKeepConnections {
		return 0
	}
	if d := c.ConnectionIdleTimeout.D(); d > 0 {
		return d
	}
	return c.policy.GracePeriod.D()
}

// CheckAll checks the routes together, path naming the list (tcp_routes): no
// two listen on one port of one address (or of every address), and none listens
// where another listener of the node does (others: field path → address).
// known reports whether an app id is one the drivers may own, and why not.
func CheckAll(routes []Config, path string, others map[string]string, known func(id string) (bool, string), errs *conf.Errors) {
	ids := map[string]int{}
	for i := range routes {
		r := &routes[i]
		at := conf.Index(path, i)
		if j, dup := ids[r.ID]; dup && r.ID != "" {
			errs.Add(conf.Key(at, "id"), "%s is already the id of %s", strconv.Quote(r.ID), conf.Index(path, j))
		} else {
			ids[r.ID] = i
		}
		if r.AppID != "" {
			if ok, why := known(r.AppID); !ok {
				errs.Add(conf.Key(at, "app_id"), "%s%s", strconv.Quote(r.AppID), why)
			}
		}
		for j := range i {
			if clash(r.Listen, routes[j].Listen) {
				errs.Add(conf.Key(at, "listen"), "%s: its port is already the listen address of %s", strconv.Quote(r.Listen), conf.Key(conf.Index(path, j), "listen"))
				break
			}
		}
		for _, field := range slices.Sorted(maps.Keys(others)) {
			if clash(r.Listen, others[field]) {
				errs.Add(conf.Key(at, "listen"), "%s: its port is already %s", strconv.Quote(r.Listen), field)
			}
		}
	}
}

// clash reports whether two listen addresses take the same port: the same
// port on the same host, or on every address (an empty host, 0.0.0.0, ::).
func clash(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	return ha == hb || anyHost(ha) || anyHost(hb)
}

func anyHost(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" || h == "[::]" }

package plugin

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/reapergw/reaper/internal/conf"
)

// RouteConfig is one entry of the configuration's routes list, in the shape of an
// Otoroshi route. Decoding it from YAML (conf.Decoder) sets the defaults documented
// on each field; a RouteConfig built in Go should start from DefaultRouteConfig.
// Decoding only checks shapes; ValidateRoutes checks the values.
type RouteConfig struct {
	// ID names the route in logs and metrics; required, unique.
	ID string `yaml:"id"`
	// Name is for humans; it defaults to ID.
	Name string `yaml:"name"`
	// Enabled defaults to true; a disabled route never matches.
	Enabled  bool           `yaml:"enabled"`
	Frontend FrontendConfig `yaml:"frontend"`
	Backend  BackendConfig  `yaml:"backend"`
	// Plugins run in the order they are listed, within each step.
	Plugins []PluginConfig `yaml:"plugins"`
}

// FrontendConfig says which requests a route takes.
type FrontendConfig struct {
	// Domains are "host" or "host/path" (at least one). The host is matched without
	// its port and regardless of case; "*.example.com" matches any name that ends in
	// ".example.com" (a.example.com, a.b.example.com) but not example.com itself;
	// "*" alone matches every host. The path is a prefix matched on segment
	// boundaries: "/v1" takes /v1 and /v1/x, not /v10.
	Domains []string `yaml:"domains"`
	// StripPath (default true) removes the matched path prefix of the domain before
	// the request is forwarded.
	StripPath bool `yaml:"strip_path"`
	// Methods, when not empty, are the only methods the route takes.
	Methods []string `yaml:"methods"`
	// Headers must all be present on the request. A value is matched exactly, or is
	// written Regex(re) (re must match the whole value) or Wildcard(w) (* stands for
	// any run of characters). A header sent several times matches if one of its
	// values does.
	Headers map[string]string `yaml:"headers"`
}

// BackendConfig says where a route's requests go. The Host header sent to a
// target is the target's own host (the headers plugin can set another one with
// request.set.Host).
type BackendConfig struct {
	// Targets are http(s) URLs (at least one), chosen by smooth weighted round
	// robin. A URL may carry a path, which prefixes every forwarded path.
	Targets []Target `yaml:"targets"`
	// Root is a path prefix put in front of the forwarded path (after the target
	// URL's own path).
	Root     string   `yaml:"root"`
	Timeouts Timeouts `yaml:"timeouts"`
	// MaxConnections bounds the connections open to one target at once
	// (WebSockets included); requests beyond it wait for a free connection. It
	// keeps a burst (thousands of held requests released together) from opening a
	// connection each and running out of file descriptors. Default 4096; 0 means
	// no limit.
	MaxConnections int `yaml:"max_connections"`
}

// Target is one backend URL with its weight. In YAML it is either the URL alone or
// a mapping {url, weight}; the weight defaults to 1 and goes up to 100.
type Target struct {
	URL    string `yaml:"url"`
	Weight int    `yaml:"weight"`

	malformed bool // decoding reported its shape already: no second error
}

// Timeouts bound the connection to the backend. Zero means no limit. Routes with
// the same three values share one pool of upstream connections.
type Timeouts struct {
	// Connect bounds opening a connection (and the TLS handshake). Default 10s.
	Connect conf.Duration `yaml:"connect"`
	// ResponseHeader bounds the wait for the backend's response headers once the
	// request is sent. Default 60s.
	ResponseHeader conf.Duration `yaml:"response_header"`
	// Idle is how long an unused upstream connection is kept open. Default 90s.
	Idle conf.Duration `yaml:"idle"`
}

// PluginConfig is one entry of a route's plugins list.
type PluginConfig struct {
	// Plugin is the id of a registered plugin kind.
	Plugin string `yaml:"plugin"`
	// Enabled defaults to true. A disabled plugin's config is still checked, but
	// the plugin is neither provisioned nor run.
	Enabled bool `yaml:"enabled"`
	// Include and Exclude are regular expressions matched against the whole request
	// path (without the query), before strip_path. With Include not empty, the
	// plugin applies only to paths that match one of them; it never applies to a
	// path that matches one of Exclude.
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// Config is the plugin's own configuration, decoded strictly into the plugin
	// instance by ValidateRoutes and BuildRouter. A zero Node means no config.
	Config yaml.Node `yaml:"config"`

	// env is the environment lookup of the decoder that read this entry, so that
	// ${VAR} in Config expands the same way as in the rest of the file.
	env func(string) (string, bool)
}

// Default timeouts, as documented on Timeouts.
const (
	DefaultConnectTimeout        = 10 * time.Second
	DefaultResponseHeaderTimeout = 60 * time.Second
	DefaultIdleTimeout           = 90 * time.Second
	// DefaultMaxConnections bounds the connections to one target.
	DefaultMaxConnections = 4096
)

// DefaultRouteConfig returns a RouteConfig with the defaults that decoding applies:
// enabled, strip_path, default timeouts.
func DefaultRouteConfig() RouteConfig {
	return RouteConfig{
		Enabled:  true,
		Frontend: FrontendConfig{StripPath: true},
		Backend: BackendConfig{MaxConnections: DefaultMaxConnections, Timeouts: Timeouts{
			Connect:        conf.Duration(DefaultConnectTimeout),
			ResponseHeader: conf.Duration(DefaultResponseHeaderTimeout),
			Idle:           conf.Duration(DefaultIdleTimeout),
		}},
	}
}

// DefaultPluginConfig returns a PluginConfig with the defaults that decoding
// applies (enabled).
func DefaultPluginConfig() PluginConfig { return PluginConfig{Enabled: true} }

// UnmarshalConf decodes a route, starting from DefaultRouteConfig.
func (r *RouteConfig) UnmarshalConf(d *conf.Decoder, n *yaml.Node, path string, errs *conf.Errors) {
	type plain RouteConfig // no methods: decodes field by field
	*r = DefaultRouteConfig()
	d.Decode(n, (*plain)(r), path, errs)
	if r.Name == "" {
		r.Name = r.ID
	}
}

// UnmarshalConf decodes a plugin entry, starting from DefaultPluginConfig, and
// remembers the decoder's environment for the plugin's own config.
func (p *PluginConfig) UnmarshalConf(d *conf.Decoder, n *yaml.Node, path string, errs *conf.Errors) {
	type plain PluginConfig
	*p = DefaultPluginConfig()
	d.Decode(n, (*plain)(p), path, errs)
	p.env = d.Env
}

// UnmarshalConf decodes a target written as a URL or as a mapping {url, weight}.
func (t *Target) UnmarshalConf(d *conf.Decoder, n *yaml.Node, path string, errs *conf.Errors) {
	type plain Target
	*t = Target{Weight: 1}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		d.Decode(n, &t.URL, path, errs)
	case yaml.MappingNode:
		d.Decode(n, (*plain)(t), path, errs)
	default:
		errs.Add(path, "must be a URL or a mapping {url, weight}, got a list")
		t.malformed = true
	}
}

// durations returns the three timeouts as time.Durations.
func (t Timeouts) durations() (connect, header, idle time.Duration) {
	return t.Connect.D(), t.ResponseHeader.D(), t.Idle.D()
}

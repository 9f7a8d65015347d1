package clusterenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Reaper configuration files, written as YAML from these types. They name only
// keys of docs/configuration.md; the tests of this package and of its users check
// the files with the project's own configuration loader, which refuses unknown
// keys, so a key renamed in reaper fails a test rather than a run.

// Config is one reaper configuration file.
type Config struct {
	Node    NodeConfig     `yaml:"node"`
	Reaper  *JobConfig     `yaml:"reaper,omitempty"`
	Store   *StoreConfig   `yaml:"store,omitempty"`
	Cluster *ClusterConfig `yaml:"cluster,omitempty"`
	PaaS    PaaSConfig     `yaml:"paas"`
	Routes  []RouteConfig  `yaml:"routes"`
	// TCPRoutes are the tcp_routes.
	TCPRoutes []TCPRouteConfig `yaml:"tcp_routes,omitempty"`
	// Triggers are the wake triggers, each as its YAML mapping.
	Triggers []map[string]any `yaml:"triggers,omitempty"`
}

// TCPRouteConfig is one of tcp_routes.
type TCPRouteConfig struct {
	ID          string `yaml:"id"`
	Listen      string `yaml:"listen"`
	AppID       string `yaml:"app_id"`
	Target      string `yaml:"target"`
	Mode        string `yaml:"mode,omitempty"`
	GracePeriod string `yaml:"grace_period,omitempty"`
	FailTimeout string `yaml:"fail_timeout,omitempty"`
	MaxHeld     int    `yaml:"max_held,omitempty"`
}

// Programs returns the program of each app, once each.
func (c Config) Programs() []string {
	var out []string
	for _, a := range c.PaaS.Apps {
		if len(a.Command) > 0 && !slices.Contains(out, a.Command[0]) {
			out = append(out, a.Command[0])
		}
	}
	return out
}

// NodeConfig is the node section.
type NodeConfig struct {
	ID     string `yaml:"id"`
	Listen string `yaml:"listen"`
	// AdminListen is always written: empty turns the admin listener off.
	AdminListen     string `yaml:"admin_listen"`
	AdminToken      string `yaml:"admin_token,omitempty"`
	DataDir         string `yaml:"data_dir"`
	ShutdownTimeout string `yaml:"shutdown_timeout,omitempty"`
	// MaxWakesPerClient is always written: its zero value turns the wake
	// limit per client off (reaper's default is 30 a minute), as benches and
	// tests that wake many apps from one loopback address need.
	MaxWakesPerClient int `yaml:"max_wakes_per_client"`
	// AuthListen is the forward-auth listener; empty: off.
	AuthListen string `yaml:"auth_listen,omitempty"`
}

// JobConfig is the reaper section (the job).
type JobConfig struct {
	JobInterval  string `yaml:"job_interval,omitempty"`
	FastInterval string `yaml:"fast_interval,omitempty"`
	MaxHeld      int    `yaml:"max_held,omitempty"`
}

// PaaSConfig is the paas section.
type PaaSConfig struct {
	Driver      string        `yaml:"driver"`
	Apps        []AppConfig   `yaml:"apps,omitempty"`
	CleverCloud *CleverConfig `yaml:"clevercloud,omitempty"`
	Kubernetes  *KubeConfig   `yaml:"kubernetes,omitempty"`
	Docker      *DockerConfig `yaml:"docker,omitempty"`
}

// DockerConfig is paas.docker (the default engine, apps declared in the file,
// no discovery from labels).
type DockerConfig struct {
	Labels bool              `yaml:"labels"`
	Apps   []DockerAppConfig `yaml:"apps"`
}

// DockerAppConfig is one of paas.docker.apps (ready once running and healthy:
// no ready key).
type DockerAppConfig struct {
	ID        string `yaml:"id"`
	Container string `yaml:"container"`
}

// KubeConfig is paas.kubernetes (a kubeconfig file, the watched namespaces).
type KubeConfig struct {
	Kubeconfig string   `yaml:"kubeconfig"`
	Namespaces []string `yaml:"namespaces,omitempty"`
}

// CleverConfig is paas.clevercloud (pointed at the fake Clever Cloud).
type CleverConfig struct {
	APIURL  string `yaml:"api_url"`
	Token   string `yaml:"token"`
	OwnerID string `yaml:"owner_id"`
	Timeout string `yaml:"timeout,omitempty"`
}

// StoreConfig is the store section (valkey, on a redis-server).
type StoreConfig struct {
	Driver  string `yaml:"driver"`
	Address string `yaml:"address"`
}

// ClusterConfig is the cluster section of one node.
type ClusterConfig struct {
	RaftListen string       `yaml:"raft_listen"`
	Secret     string       `yaml:"secret"`
	Peers      []PeerConfig `yaml:"peers"`
	// Raft's timeouts; empty: reaper's defaults.
	HeartbeatTimeout   string `yaml:"heartbeat_timeout,omitempty"`
	ElectionTimeout    string `yaml:"election_timeout,omitempty"`
	LeaderLeaseTimeout string `yaml:"leader_lease_timeout,omitempty"`
}

// PeerConfig is one of cluster.peers.
type PeerConfig struct {
	ID       string `yaml:"id"`
	RaftAddr string `yaml:"raft_addr"`
	APIAddr  string `yaml:"api_addr"`
}

// AppConfig is one of paas.apps (the process driver).
type AppConfig struct {
	ID          string      `yaml:"id"`
	Command     []string    `yaml:"command"`
	Ready       ReadyConfig `yaml:"ready"`
	StopTimeout string      `yaml:"stop_timeout,omitempty"`
	StopSignal  string      `yaml:"stop_signal,omitempty"`
	LogFile     string      `yaml:"log_file,omitempty"`
}

// ReadyConfig is an app's readiness probe: one of its keys.
type ReadyConfig struct {
	TCP      string `yaml:"tcp,omitempty"`
	Postgres string `yaml:"postgres,omitempty"`
}

// RouteConfig is one of routes.
type RouteConfig struct {
	ID       string         `yaml:"id"`
	Frontend FrontendConfig `yaml:"frontend"`
	Backend  BackendConfig  `yaml:"backend"`
	Plugins  []PluginConfig `yaml:"plugins,omitempty"`
}

// FrontendConfig is a route's frontend.
type FrontendConfig struct {
	Domains []string `yaml:"domains"`
}

// BackendConfig is a route's backend.
type BackendConfig struct {
	Targets []string `yaml:"targets"`
}

// PluginConfig is one plugin of a route: here always the reaper plugin.
type PluginConfig struct {
	Plugin string             `yaml:"plugin"`
	Config ReaperPluginConfig `yaml:"config"`
}

// ReaperPluginConfig is the reaper plugin's configuration.
type ReaperPluginConfig struct {
	AppID             string             `yaml:"app_id"`
	GracePeriod       string             `yaml:"grace_period"`
	FailTimeout       string             `yaml:"fail_timeout,omitempty"`
	APIBehavior       string             `yaml:"api_behavior"`
	MaxHeld           int                `yaml:"max_held,omitempty"`
	ReadyDelay        string             `yaml:"ready_delay,omitempty"`
	MonitoringFilters []MonitoringFilter `yaml:"monitoring_filters,omitempty"`
}

// MonitoringFilter is one of the plugin's monitoring_filters.
type MonitoringFilter struct {
	Source string `yaml:"source"`
	Name   string `yaml:"name,omitempty"`
	Regex  string `yaml:"regex"`
}

// WriteConfig writes c as dir/reaper.yaml, with its data directory under dir, and
// returns the file's path.
func WriteConfig(dir string, c Config) (string, error) {
	c.Node.DataDir = filepath.Join(dir, "data")
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("clusterenv: writing the reaper config: %w", err)
	}
	path := filepath.Join(dir, "reaper.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("clusterenv: writing the reaper config: %w", err)
	}
	return path, nil
}

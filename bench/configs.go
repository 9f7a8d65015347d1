package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// The reaper configuration files of the bench, written as YAML from these types.
// They name only keys of docs/configuration.md; configs_test.go checks each one
// with the project's own configuration loader.

type reaperConfig struct {
	Node    nodeConfig     `yaml:"node"`
	Reaper  *jobConfig     `yaml:"reaper,omitempty"`
	Store   *storeConfig   `yaml:"store,omitempty"`
	Cluster *clusterConfig `yaml:"cluster,omitempty"`
	PaaS    paasConfig     `yaml:"paas"`
	Routes  []routeConfig  `yaml:"routes"`
}

type nodeConfig struct {
	ID     string `yaml:"id"`
	Listen string `yaml:"listen"`
	// AdminListen is always written: empty turns the admin listener off.
	AdminListen     string `yaml:"admin_listen"`
	AdminToken      string `yaml:"admin_token,omitempty"`
	DataDir         string `yaml:"data_dir"`
	ShutdownTimeout string `yaml:"shutdown_timeout,omitempty"`
}

type jobConfig struct {
	JobInterval  string `yaml:"job_interval,omitempty"`
	FastInterval string `yaml:"fast_interval,omitempty"`
	MaxHeld      int    `yaml:"max_held,omitempty"`
}

type paasConfig struct {
	Driver      string        `yaml:"driver"`
	Apps        []appConfig   `yaml:"apps,omitempty"`
	CleverCloud *cleverConfig `yaml:"clevercloud,omitempty"`
}

// cleverConfig is paas.clevercloud (part G points it at the in-process fake).
type cleverConfig struct {
	APIURL  string `yaml:"api_url"`
	Token   string `yaml:"token"`
	OwnerID string `yaml:"owner_id"`
	Timeout string `yaml:"timeout,omitempty"`
}

// storeConfig is the store section (part G: valkey, on a redis-server).
type storeConfig struct {
	Driver  string `yaml:"driver"`
	Address string `yaml:"address"`
}

// clusterConfig is the cluster section of one node.
type clusterConfig struct {
	RaftListen string       `yaml:"raft_listen"`
	Secret     string       `yaml:"secret"`
	Peers      []peerConfig `yaml:"peers"`
}

type peerConfig struct {
	ID       string `yaml:"id"`
	RaftAddr string `yaml:"raft_addr"`
	APIAddr  string `yaml:"api_addr"`
}

type appConfig struct {
	ID          string      `yaml:"id"`
	Command     []string    `yaml:"command"`
	Ready       readyConfig `yaml:"ready"`
	StopTimeout string      `yaml:"stop_timeout,omitempty"`
}

type readyConfig struct {
	TCP string `yaml:"tcp"`
}

type routeConfig struct {
	ID       string         `yaml:"id"`
	Frontend frontendConfig `yaml:"frontend"`
	Backend  backendConfig  `yaml:"backend"`
	Plugins  []pluginConfig `yaml:"plugins,omitempty"`
}

type frontendConfig struct {
	Domains []string `yaml:"domains"`
}

type backendConfig struct {
	Targets []string `yaml:"targets"`
}

type pluginConfig struct {
	Plugin string             `yaml:"plugin"`
	Config reaperPluginConfig `yaml:"config"`
}

type reaperPluginConfig struct {
	AppID       string `yaml:"app_id"`
	GracePeriod string `yaml:"grace_period"`
	FailTimeout string `yaml:"fail_timeout,omitempty"`
	APIBehavior string `yaml:"api_behavior"`
	MaxHeld     int    `yaml:"max_held,omitempty"`
}

// programs returns the program of each app, once each.
func (c reaperConfig) programs() []string {
	var out []string
	for _, a := range c.PaaS.Apps {
		if len(a.Command) > 0 && !slices.Contains(out, a.Command[0]) {
			out = append(out, a.Command[0])
		}
	}
	return out
}

// newNodeConfig returns a node on a free loopback port (reaper logs the port it
// got), without admin listener, that stops within 2 s.
func newNodeConfig(id string) nodeConfig {
	return nodeConfig{ID: id, Listen: "127.0.0.1:0", AdminListen: "", ShutdownTimeout: "2s"}
}

// demoApp returns a process-driver app running the demo app on addr.
func demoApp(demoBin, id, addr string, extra ...string) appConfig {
	argv := append([]string{demoBin, "--listen", addr, "--name", id}, extra...)
	return appConfig{ID: id, Command: argv, Ready: readyConfig{TCP: addr}, StopTimeout: "5s"}
}

// plainRoute routes host to addr with no plugin.
func plainRoute(id, host, addr string) routeConfig {
	return routeConfig{
		ID:       id,
		Frontend: frontendConfig{Domains: []string{host}},
		Backend:  backendConfig{Targets: []string{"http://" + addr}},
	}
}

// reaperRoute routes host to addr through the reaper plugin.
func reaperRoute(id, host, addr string, p reaperPluginConfig) routeConfig {
	r := plainRoute(id, host, addr)
	r.Plugins = []pluginConfig{{Plugin: "reaper", Config: p}}
	return r
}

// writeConfig writes c as dir/reaper.yaml, with its data directory under dir, and
// returns the file's path.
func writeConfig(dir string, c reaperConfig) (string, error) {
	c.Node.DataDir = filepath.Join(dir, "data")
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("bench: writing the reaper config: %w", err)
	}
	path := filepath.Join(dir, "reaper.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("bench: writing the reaper config: %w", err)
	}
	return path, nil
}

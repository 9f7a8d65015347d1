package main

import "github.com/reapergw/reaper/internal/clusterenv"

// The bench's reaper configurations are written from clusterenv's types (which
// name only keys of docs/configuration.md); configs_test.go checks each one with
// the project's own configuration loader. These helpers build the pieces the
// single-node parts (A-F) share.

// newNodeConfig returns a node on a free loopback port (reaper logs the port it
// got), without admin listener, that stops within 2 s.
func newNodeConfig(id string) clusterenv.NodeConfig {
	return clusterenv.NodeConfig{ID: id, Listen: "127.0.0.1:0", AdminListen: "", ShutdownTimeout: "2s"}
}

// demoApp returns a process-driver app running the demo app on addr.
func demoApp(demoBin, id, addr string, extra ...string) clusterenv.AppConfig {
	argv := append([]string{demoBin, "--listen", addr, "--name", id}, extra...)
	return clusterenv.AppConfig{ID: id, Command: argv, Ready: clusterenv.ReadyConfig{TCP: addr}, StopTimeout: "5s"}
}

// plainRoute routes host to addr with no plugin.
func plainRoute(id, host, addr string) clusterenv.RouteConfig {
	return clusterenv.RouteConfig{
		ID:       id,
		Frontend: clusterenv.FrontendConfig{Domains: []string{host}},
		Backend:  clusterenv.BackendConfig{Targets: []string{"http://" + addr}},
	}
}

// reaperRoute routes host to addr through the reaper plugin.
func reaperRoute(id, host, addr string, p clusterenv.ReaperPluginConfig) clusterenv.RouteConfig {
	r := plainRoute(id, host, addr)
	r.Plugins = []clusterenv.PluginConfig{{Plugin: "reaper", Config: p}}
	return r
}

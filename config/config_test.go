package config

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParse_Defaults(t *testing.T) {
	cfg, err := Parse([]byte("node: {id: n1}"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node.Listen != "127.0.0.1:8080" || cfg.Node.AdminListen != "127.0.0.1:9090" || cfg.Node.DataDir != "./data" ||
		cfg.Node.ShutdownTimeout.D() != 30*time.Second || cfg.Reaper.JobInterval.D() != 30*time.Second ||
		cfg.Reaper.FastInterval.D() != 5*time.Second || cfg.PaaS.Driver != DriverProcess || cfg.Store.Driver != StoreMemory {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestParse_TheDesignExample(t *testing.T) {
	// The file of docs/configuration.md and DESIGN.md must keep working.
	src := `
node:
  id: node-1
  listen: 127.0.0.1:8080
  admin_listen: 127.0.0.1:9090
  admin_token: ${REAPER_ADMIN_TOKEN}
  data_dir: ./data
reaper:
  job_interval: 30s
  fast_interval: 5s
paas:
  driver: process
  apps:
    - id: hello
      command: ["./bin/demoapp", "--listen", "127.0.0.1:3001"]
      ready: {tcp: 127.0.0.1:3001}
routes:
  - id: hello
    frontend: {domains: [hello.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins:
      - plugin: reaper
        config:
          app_id: hello
          grace_period: 15m
          api_behavior: hold
          monitoring_filters:
            - {source: user_agent, regex: "(?i)uptimerobot"}
`
	cfg, err := Parse([]byte(src), env(map[string]string{"REAPER_ADMIN_TOKEN": "t0ken"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node.AdminToken.Reveal() != "t0ken" || len(cfg.Routes) != 1 || len(cfg.PaaS.Apps) != 1 {
		t.Errorf("cfg: %+v", cfg)
	}
}

func TestParse_ExamplesInTheRepository(t *testing.T) {
	for _, f := range []string{"../examples/demo.yaml", "../examples/docker.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(data, env(nil)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestParse_ErrorsWordForWord(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"listen", "node: {listen: nope, admin_listen: '1.2.3.4:99999'}", []string{
			`node.listen: "nope" is not an address (write host:port, such as 127.0.0.1:8080 or :8080)`,
			`node.admin_listen: "1.2.3.4:99999" has no valid port`,
		}},
		{"node fields", "node: {data_dir: '', max_header_bytes: 10, read_header_timeout: 0, body_idle_timeout: 0, trusted_proxies: [10.0.0.0/33, banana]}", []string{
			`node.data_dir: is required`,
			`node.max_header_bytes: must be at least 1024`,
			`node.read_header_timeout: must be more than 0`,
			`node.body_idle_timeout: must be more than 0`,
			`node.trusted_proxies[0]: "10.0.0.0/33" is not a valid CIDR prefix (such as 10.0.0.0/8 or fd00::/8)`,
			`node.trusted_proxies[1]: "banana" is not a valid IP address or CIDR prefix`,
		}},
		{"forward-auth", "node: {auth_listen: nope, auth_hold_max: 0s, auth_trusted_proxies: [10.0.0.0/8, banana]}", []string{
			`node.auth_listen: "nope" is not an address (write host:port, such as 127.0.0.1:8080 or :8080)`,
			`node.auth_hold_max: must be more than 0`,
			`node.auth_trusted_proxies[1]: "banana" is not a valid IP address or CIDR prefix`,
		}},
		{"traefik", "node: {auth_url: 'ftp://x', auth_traefik_routes: [nope]}", []string{
			`node.auth_url: "ftp://x" is not an http:// or https:// URL`,
			`node.auth_traefik_routes: needs node.auth_listen: Traefik reaches reaper there`,
			`node.auth_traefik_routes[0]: "nope" is not the id of a route`,
		}},
		{"tls", "node: {tls: {cert: /nonexistent/cert.pem}}", []string{
			`node.tls.cert: "/nonexistent/cert.pem" cannot be read: no such file or directory`,
			`node.tls.key: is required with tls (or acme, for certificates from an ACME CA)`,
		}},
		{"reaper intervals", "reaper: {job_interval: 0.5, fast_interval: 10ms, max_held: -1}", []string{
			`reaper.job_interval: must be at least 1s`,
			`reaper.fast_interval: must be at least 100ms`,
			`reaper.max_held: must be 0 (half the open-file limit) or more, not -1`,
		}},
		{"drivers", "paas: {driver: nomad}\nstore: {driver: etcd}", []string{
			`store.driver: "etcd" is not a store (use memory or valkey)`,
			`paas.driver: "nomad" is not a driver (use process, clevercloud, docker or kubernetes)`,
		}},
		{"valkey", "store: {driver: valkey}", []string{
			`store.address: is required with the valkey store (host:port)`,
		}},
		{"clever without its section", "paas: {driver: clevercloud}", []string{
			`paas.clevercloud: is required with driver clevercloud (a token or oauth credentials)`,
		}},
		{"cluster", "node: {id: n9}\nstore: {driver: memory}\ncluster: {raft_listen: x, secret: short, peers: [{id: a, raft_addr: '127.0.0.1:1', api_addr: '127.0.0.1:2'}, {id: a, raft_addr: '127.0.0.1:3', api_addr: '127.0.0.1:4'}]}", []string{
			`cluster.raft_listen: "x" is not an address (write host:port, such as 127.0.0.1:8080 or :8080)`,
			`cluster.secret: must be at least 16 characters (every node shares it)`,
			`cluster.peers[1].id: "a" is listed twice`,
			`store.driver: must be valkey in a cluster: the nodes share their state through it`,
			`paas.driver: process runs apps on one machine, which no other node can see: a cluster needs a shared platform (clevercloud, or docker engines every node reaches)`,
		}},
		{"cluster timeouts out of bounds", "store: {driver: valkey, address: '127.0.0.1:6379'}\ncluster: {raft_listen: '127.0.0.1:7000', secret: 0123456789abcdef, heartbeat_timeout: 5ms, election_timeout: 500}", []string{
			`cluster.heartbeat_timeout: 5ms is under 10ms (0 or absent: the default)`,
			`cluster.election_timeout: 8m20s is over 1m0s: a bare number is seconds (write 500ms for milliseconds)`,
			`paas.driver: process runs apps on one machine, which no other node can see: a cluster needs a shared platform (clevercloud, or docker engines every node reaches)`,
		}},
		{"cluster timeouts inconsistent", "store: {driver: valkey, address: '127.0.0.1:6379'}\ncluster: {raft_listen: '127.0.0.1:7000', secret: 0123456789abcdef, heartbeat_timeout: 1s, election_timeout: 500ms, leader_lease_timeout: 2s}", []string{
			`cluster.leader_lease_timeout: 2s must not exceed the heartbeat timeout (1s): a leader must hear from a majority within its lease`,
			`cluster.election_timeout: 500ms must not be under the heartbeat timeout (1s)`,
			`paas.driver: process runs apps on one machine, which no other node can see: a cluster needs a shared platform (clevercloud, or docker engines every node reaches)`,
		}},
		{"unknown top-level key", "rotues: []", []string{
			`rotues: unknown key (did you mean "routes"?)`,
		}},
		{"reaper app unknown to the process driver", `
paas: {apps: [{id: web, command: [x], ready: {tcp: "127.0.0.1:1"}}]}
routes:
  - id: r
    frontend: {domains: [a.test]}
    backend: {targets: ["http://127.0.0.1:1"]}
    plugins: [{plugin: reaper, config: {app_id: wbe}}, {plugin: reaper, config: {grace_period: 1h}}]
`, []string{
			`routes[0].plugins[0].config.app_id: "wbe" is not an app of paas.apps (did you mean "web"?)`,
			`routes[0].plugins[1]: is a second reaper plugin on the route (the first is routes[0].plugins[0]): one app per route`,
		}},
		{"max_failed_boots out of bounds", `
paas: {apps: [{id: web, command: [x], ready: {tcp: "127.0.0.1:1"}}, {id: api, command: [x], ready: {tcp: "127.0.0.1:2"}}]}
routes:
  - {id: r, frontend: {domains: [a.test]}, backend: {targets: ["http://127.0.0.1:1"]}, plugins: [{plugin: reaper, config: {app_id: web, max_failed_boots: 0}}]}
  - {id: s, frontend: {domains: [b.test]}, backend: {targets: ["http://127.0.0.1:2"]}, plugins: [{plugin: reaper, config: {app_id: api, max_failed_boots: 101}}]}
`, []string{
			`routes[0].plugins[0].config.max_failed_boots: 0 is not from 1 to 100`,
			`routes[1].plugins[0].config.max_failed_boots: 101 is not from 1 to 100`,
		}},
		{"secret value never in an error", "node: {admin_token: [s3cr3t]}", []string{
			`node.admin_token: must be a string, got a list`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, tc.src)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// problems parses src and returns its problems, one line each; none for a valid file.
func problems(t *testing.T, src string) []string {
	t.Helper()
	_, err := Parse([]byte(src), env(nil))
	if err == nil {
		return nil
	}
	var list conf.List
	if !errors.As(err, &list) {
		t.Fatalf("err = %v, want a list of problems", err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	return got
}

func TestParse_SecretsFromTheEnvironmentStayHidden(t *testing.T) {
	cfg, err := Parse([]byte("node: {admin_token: '${TOKEN}'}"), env(map[string]string{"TOKEN": "hunter2hunter2"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node.AdminToken.Reveal() != "hunter2hunter2" {
		t.Fatal("token not read")
	}
	_, err = Parse([]byte("node: {admin_token: '${TOKEN}', listen: bad}"), env(map[string]string{"TOKEN": "hunter2hunter2"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
}

// FuzzParse feeds arbitrary files to the loader: it must never panic, and a file it
// accepts must be accepted again (decoding is deterministic).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"node: {id: a}",
		"routes: [{id: a, frontend: {domains: [a.test]}, backend: {targets: ['http://127.0.0.1:1']}}]",
		"a: &a [*a]",
		"node: {listen: ${X:-127.0.0.1:1}}",
		"routes: [{id: a, plugins: [{plugin: headers, config: {request: {set: {a: b}}}}]}]",
		"<<: {node: {id: x}}",
		"paas: {apps: [{id: x, command: [y], ready: {tcp: 'h:1'}}]}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, env(map[string]string{"X": "1"}))
		if err != nil {
			return
		}
		if _, err := Parse(data, env(map[string]string{"X": "1"})); err != nil {
			t.Fatalf("accepted once, refused then: %v", err)
		}
		_ = cfg
	})
}

package config

import (
	"strings"
	"testing"
)

func TestParse_SeveralDrivers(t *testing.T) {
	src := `
paas:
  driver: [process, docker]
  apps: [{id: demo, command: [demoapp], ready: {tcp: "127.0.0.1:3001"}}]
  docker: {apps: [{id: web, container: web-1}]}
routes:
  - {id: a, frontend: {domains: [a.localhost]}, backend: {targets: ["http://127.0.0.1:3001"]}, plugins: [{plugin: reaper, config: {app_id: demo}}]}
  - {id: b, frontend: {domains: [b.localhost]}, backend: {targets: ["http://127.0.0.1:3101"]}, plugins: [{plugin: reaper, config: {app_id: web}}]}
  - {id: c, frontend: {domains: [c.localhost]}, backend: {targets: ["http://127.0.0.1:3102"]}, plugins: [{plugin: reaper, config: {app_id: labelled}}]}
`
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.PaaS.Driver
	if d != "process+docker" || !d.Has(DriverProcess) || !d.Has(DriverDocker) || d.Has(DriverCleverCloud) || !d.Multi() {
		t.Errorf("driver = %q", d)
	}
	one, err := Parse([]byte("paas: {driver: [docker]}"), env(nil))
	if err != nil || one.PaaS.Driver != DriverDocker || one.PaaS.Driver.Multi() {
		t.Errorf("a list of one: %q, %v", one.PaaS.Driver, err)
	}
}

func TestParse_SeveralDriversErrors(t *testing.T) {
	route := func(id string) string {
		return `
routes:
  - {id: r, frontend: {domains: [r.localhost]}, backend: {targets: ["http://127.0.0.1:3001"]}, plugins: [{plugin: reaper, config: {app_id: ` + id + `}}]}
`
	}
	cases := []struct {
		name, src string
		want      []string
	}{
		{"names", "paas: {driver: [process, nomad, process, 3]}", []string{
			`paas.driver[1]: "nomad" is not a driver (use process, clevercloud, docker or kubernetes)`,
			`paas.driver[2]: "process" is already listed at paas.driver[0]`,
			`paas.driver[3]: "3" is not a driver`,
		}},
		{"a cluster", "node: {id: a}\nstore: {driver: valkey, address: '127.0.0.1:6379'}\npaas: {driver: [docker, process]}\ncluster: {raft_listen: '127.0.0.1:7000', secret: a-secret-of-32-characters-at-least, peers: [{id: a, raft_addr: '127.0.0.1:7000', api_addr: '127.0.0.1:9090'}]}", []string{
			`paas.driver: process runs apps on one machine, which no other node can see`,
		}},
		{"empty", "paas: {driver: []}", []string{`paas.driver: must name at least one driver (process, clevercloud, docker or kubernetes)`}},
		{"joined", "paas: {driver: process+docker}", []string{`paas.driver: "process+docker" is not a driver (list several as [process, docker])`}},
		{"sections", "paas: {driver: [docker, clevercloud], apps: [{id: x, command: [x], ready: {tcp: '127.0.0.1:1'}}]}", []string{
			`paas.apps: is only read with driver process (the drivers are docker, clevercloud; containers go under paas.docker.apps)`,
			`paas.clevercloud: is required with driver clevercloud (a token or oauth credentials)`,
		}},
		{"twice declared", "paas: {driver: [process, docker], apps: [{id: a, command: [x], ready: {tcp: '127.0.0.1:1'}}, {id: web, command: [x], ready: {tcp: '127.0.0.1:2'}}], docker: {apps: [{id: web, container: w}]}}", []string{
			`paas.docker.apps[0].id: "web" is already the id of paas.apps[1]: an app has one driver`,
		}},
		{"nobody owns it", "paas: {driver: [process, docker], apps: [{id: demo, command: [x], ready: {tcp: '127.0.0.1:1'}}], docker: {labels: false, apps: [{id: web, container: w}]}}" + route("dem"), []string{
			`routes[0].plugins[0].config.app_id: "dem" is not an app of paas.apps or paas.docker.apps (and paas.docker.labels is off) (did you mean "demo"?)`,
		}},
		{"not a clever id", "paas: {driver: [process, clevercloud], clevercloud: {token: t}}" + route("ghost"), []string{
			`routes[0].plugins[0].config.app_id: "ghost" is not an app of paas.apps, nor a Clever Cloud app id (app_<uuid>)`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), env(nil))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
		})
	}
}

func TestParse_SeveralDriversAcceptWhatOneCouldOwn(t *testing.T) {
	route := func(id string) string {
		return `
routes:
  - {id: r, frontend: {domains: [r.localhost]}, backend: {targets: ["http://127.0.0.1:3001"]}, plugins: [{plugin: reaper, config: {app_id: ` + id + `}}]}
`
	}
	for name, src := range map[string]string{
		"a label's id":       "paas: {driver: [process, docker]}" + route("labelled"),
		"a Clever Cloud app": "paas: {driver: [docker, clevercloud], clevercloud: {token: t}, docker: {labels: false}}" + route("app_3f0c5a8e-8a7c-4b8e-9d5e-1a2b3c4d5e6f"),
	} {
		if _, err := Parse([]byte(src), env(nil)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestParse_Kubernetes: driver kubernetes reads paas.kubernetes, whose errors
// name their field, and a route may name an app its annotations will declare.
func TestParse_Kubernetes(t *testing.T) {
	src := `
paas:
  driver: kubernetes
  kubernetes:
    namespaces: [shop]
    apps: [{id: web, replicas: 2}, {id: db, kind: DaemonSet}]
routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins: [{plugin: reaper, config: {app_id: web}}, {plugin: reaper, config: {app_id: discovered}}]
`
	_, err := Parse([]byte(src), nil)
	if err == nil || !strings.Contains(err.Error(), `paas.kubernetes.apps[1].kind: "DaemonSet" is not a kind`) {
		t.Fatalf("got %v, want the kind's error at its path", err)
	}
	if strings.Contains(err.Error(), "discovered") {
		t.Errorf("an app id annotations may declare was refused: %v", err)
	}
	if _, err := Parse([]byte("paas: {driver: docker, kubernetes: {}}"), nil); err == nil || !strings.Contains(err.Error(), "paas.kubernetes: is only read with driver kubernetes") {
		t.Errorf("paas.kubernetes with driver docker: %v", err)
	}
}

// TestParse_KubernetesInAList: kubernetes is one of a list of drivers, and
// its section is read beside the process driver's apps.
func TestParse_KubernetesInAList(t *testing.T) {
	src := `
paas:
  driver: [process, kubernetes]
  apps: [{id: api, command: ["./bin/api"], ready: {tcp: "127.0.0.1:3001"}}]
  kubernetes: {namespaces: [shop], apps: [{id: web}]}
routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:3002"]}
    plugins: [{plugin: reaper, config: {app_id: web}}]
`
	c, err := Parse([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.PaaS.Driver.Has(DriverKubernetes) || c.PaaS.Kubernetes == nil || c.PaaS.Kubernetes.Apps[0].ID != "web" {
		t.Errorf("parsed %+v", c.PaaS)
	}
}

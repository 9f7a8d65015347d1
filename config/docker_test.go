package config

import (
	"strings"
	"testing"
)

const dockerRoute = `
routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:3101"]}
    plugins: [{plugin: reaper, config: {app_id: %s}}]
`

func TestParse_DockerDriver(t *testing.T) {
	src := `
paas:
  driver: docker
  docker:
    host: unix:///run/docker-proxy.sock
    apps:
      - id: web
        container: web-1
        stop_method: pause
        ready: {http: "http://127.0.0.1:3101/healthz"}
        depends_on: [db]
      - {id: db, container: db-1}
` + strings.ReplaceAll(dockerRoute, "%s", "labelled")
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.PaaS.Docker
	if cfg.PaaS.Driver != DriverDocker || d == nil || len(d.Apps) != 2 || d.Apps[0].StopMethod != "pause" || !d.LabelsOn() {
		t.Errorf("parsed: %+v", d)
	}
}

func TestParse_DockerErrorsNameTheirField(t *testing.T) {
	src := `
paas:
  driver: docker
  apps: [{id: x, command: [x], ready: {tcp: "127.0.0.1:1"}}]
  docker:
    host: ssh://box
    labels: false
    apps:
      - {id: web, container: web-1, stop_method: freeze, depends_on: [db], ready: {tcp: nope}}
      - {id: db, container: db-1, depends_on: [web], host: elsewhere}
      - {id: web, price_per_hour: -1}
` + strings.ReplaceAll(dockerRoute, "%s", "ghost")
	_, err := Parse([]byte(src), env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"paas.apps: is only read with driver process (the driver is docker; containers go under paas.docker.apps)",
		"paas.docker.host: ssh:// engines are not supported",
		`paas.docker.apps[0].stop_method: "freeze" is not a stop method`,
		`paas.docker.apps[0].ready.tcp: "nope" is not host:port`,
		`paas.docker.apps[1].host: "elsewhere" is not the name of an engine in hosts`,
		"paas.docker.apps: depends_on makes a cycle: web → db → web",
		"paas.docker.apps[2].container: is required",
		`paas.docker.apps[2].id: "web" is already the id of paas.docker.apps[0]`,
		"paas.docker.apps[2].price_per_hour: must be a price of zero or more",
		`routes[0].plugins[0].config.app_id: "ghost" is not an app of paas.docker.apps (and paas.docker.labels is off)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func TestParse_DockerSectionOnlyWithItsDriver(t *testing.T) {
	_, err := Parse([]byte("paas: {driver: process, docker: {host: unix:///x.sock}}"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "paas.docker: is only read with driver docker (the driver is process)") {
		t.Errorf("err = %v", err)
	}
}

func TestDockerReadiness_OnlyWithTheDockerDriver(t *testing.T) {
	src := `
paas:
  driver: [process, docker]
  apps: [{id: proc, command: [x], ready: {tcp: "127.0.0.1:3001"}}]
  docker:
    labels: false
    apps: [{id: web, container: web-1, ready: {tcp: "127.0.0.1:3101"}}]
` + strings.ReplaceAll(dockerRoute, "%s", "web")
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.DockerReadiness(env(nil))
	if len(got) != 1 || !strings.HasPrefix(got[0], "web (container web-1): tcp 127.0.0.1:3101 → if the container publishes that port: the container's own address") {
		t.Errorf("lines %q: want the docker app's only", got)
	}
	cfg, err = Parse([]byte("paas: {driver: process, apps: [{id: web, command: [x], ready: {tcp: \"127.0.0.1:3001\"}}]}\n"+strings.ReplaceAll(dockerRoute, "%s", "web")), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.DockerReadiness(env(nil)); got != nil {
		t.Errorf("without the docker driver: %q, want nothing", got)
	}
}

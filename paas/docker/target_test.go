package docker

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"

	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/paas/probe"
)

// These tests need no engine.

func TestResolveTarget(t *testing.T) {
	ip := netip.MustParseAddr
	bridge := endpoint{"bridge", ip("172.17.0.3")}
	user := endpoint{"appnet", ip("172.20.0.5")}
	pub := func(port uint16, hostIP string, hostPort uint16) binding {
		b := binding{port: port, hostPort: hostPort}
		if hostIP != "" {
			b.hostIP = ip(hostIP)
		}
		return b
	}
	tcp := func(a string) *probe.Config { return &probe.Config{TCP: a} }
	published := netView{mode: "bridge", published: []binding{pub(8080, "127.0.0.1", 8081)}, exposed: []uint16{8080}, addrs: []endpoint{bridge}}
	everywhere := netView{mode: "bridge", published: []binding{pub(8080, "0.0.0.0", 8081), pub(8080, "::", 8081)}, exposed: []uint16{8080}, addrs: []endpoint{bridge}}
	for _, c := range []struct {
		name  string
		ready *probe.Config
		net   netView
		local bool
		want  string // tcp address, "http …", or "" for the state only
		own   bool
	}{
		{"tcp on the published port: the container's own address", tcp("127.0.0.1:8081"), published, true, "172.17.0.3:8080", true},
		{"localhost names a port published on loopback", tcp("localhost:8081"), published, true, "172.17.0.3:8080", true},
		{"published on every address: any address of the host", tcp("192.0.2.2:8081"), everywhere, true, "172.17.0.3:8080", true},
		{"published on every address: loopback too", tcp("127.0.0.1:8081"), everywhere, true, "172.17.0.3:8080", true},
		{"published on loopback only: another address is not it", tcp("192.0.2.2:8081"), published, true, "192.0.2.2:8081", false},
		{"a port it does not publish: as given", tcp("127.0.0.1:9000"), published, true, "127.0.0.1:9000", false},
		{"a network alias is not the port proxy: as given", tcp("app:8081"), everywhere, true, "app:8081", false},
		{"http: as given", &probe.Config{HTTP: "http://127.0.0.1:8081/healthz"}, published, true, "http http://127.0.0.1:8081/healthz", false},
		{"a remote engine: as given", tcp("10.0.0.2:8081"), everywhere, false, "10.0.0.2:8081", false},
		{"network_mode host: as given", tcp("127.0.0.1:8081"), netView{mode: "host"}, true, "127.0.0.1:8081", false},
		{"another container's network: as given", tcp("127.0.0.1:8081"), netView{mode: "container:abc", published: published.published, addrs: []endpoint{bridge}}, true, "127.0.0.1:8081", false},
		{"no address (network none): as given", tcp("127.0.0.1:8081"), netView{mode: "none", published: published.published}, true, "127.0.0.1:8081", false},
		{"on a user network: its address there", tcp("127.0.0.1:8081"), netView{published: published.published, addrs: []endpoint{user}}, true, "172.20.0.5:8080", true},
		{"the bridge preferred", tcp("127.0.0.1:8081"), netView{published: published.published, addrs: []endpoint{bridge, user}}, true, "172.17.0.3:8080", true},
		{"IPv6 only", tcp("127.0.0.1:8081"), netView{published: published.published, addrs: []endpoint{{"v6", ip("fd00:1::3")}}}, true, "[fd00:1::3]:8080", true},
		{"the host port a container port is published on", tcp("127.0.0.1:8443"),
			netView{published: []binding{pub(80, "127.0.0.1", 8080), pub(443, "127.0.0.1", 8443)}, addrs: []endpoint{bridge}}, true, "172.17.0.3:443", true},

		{"postgres on the published port: the container's own address", &probe.Config{Postgres: "127.0.0.1:8081"}, published, true, "postgres 172.17.0.3:8080", true},
		{"redis as given, with its password", &probe.Config{Redis: "127.0.0.1:9000", Password: "pw"}, published, true, "redis 127.0.0.1:9000", false},

		{"no ready: the first published port", nil,
			netView{published: []binding{pub(80, "", 8080), pub(443, "", 8443)}, exposed: []uint16{80, 443, 9000}, addrs: []endpoint{bridge}}, true, "172.17.0.3:80", true},
		{"no ready: the only exposed port", nil, netView{exposed: []uint16{5432}, addrs: []endpoint{user}}, true, "172.20.0.5:5432", true},
		{"no ready: several exposed, none published: the state", nil, netView{exposed: []uint16{80, 443}, addrs: []endpoint{bridge}}, true, "", false},
		{"no ready: no port: the state", nil, netView{addrs: []endpoint{bridge}}, true, "", false},
		{"no ready: network_mode host: the state", nil, netView{mode: "host", exposed: []uint16{8080}}, true, "", false},
		{"no ready: a remote engine: the state", nil, published, false, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := resolveTarget(c.ready, c.net, c.local)
			shown := got.tcp
			if got.http != "" {
				shown = "http " + got.http
			}
			if got.proto != nil {
				shown = got.proto.Kind() + " " + got.tcp
				if got.proto.Password != c.ready.Password {
					t.Errorf("the probe lost its password")
				}
			}
			if shown != c.want || got.own != c.own {
				t.Errorf("probe %q (own %v), want %q (own %v): %s", shown, got.own, c.want, c.own, got)
			}
			if got.own && !strings.Contains(got.String(), "own address") {
				t.Errorf("the log says %q: not that it is the container's own address", got)
			}
		})
	}
}

func TestLocalEngine(t *testing.T) {
	for host, want := range map[string]bool{
		"unix:///var/run/docker.sock": true, "tcp://127.0.0.1:2375": true, "tcp://localhost:2375": true,
		"tcp://[::1]:2376": true, "http://127.0.0.1:2375/": true,
		"tcp://10.0.0.2:2376": false, "https://docker.example.com:2376": false, "ssh://host": false,
	} {
		if got := localEngine(host); got != want {
			t.Errorf("localEngine(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestReadNet_FromAnInspection(t *testing.T) {
	// The shape of GET /containers/{id}/json of a running container: published
	// on loopback, one udp port, on the bridge and a user network.
	const inspected = `{
	  "HostConfig": {"NetworkMode": "appnet"},
	  "Config": {"ExposedPorts": {"8080/tcp": {}, "9000/tcp": {}, "53/udp": {}}},
	  "NetworkSettings": {
	    "Ports": {"8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": "8081"}], "9000/tcp": null, "53/udp": [{"HostIp": "0.0.0.0", "HostPort": "5353"}]},
	    "Networks": {
	      "appnet": {"IPAddress": "172.20.0.5", "Gateway": "172.20.0.1"},
	      "bridge": {"IPAddress": "172.17.0.3", "Gateway": "172.17.0.1"},
	      "stopped": {"IPAddress": ""}
	    }
	  }
	}`
	var c container.InspectResponse
	if err := json.Unmarshal([]byte(inspected), &c); err != nil {
		t.Fatal(err)
	}
	n := readNet(c)
	want := netView{
		mode:      "appnet",
		published: []binding{{port: 8080, hostIP: netip.MustParseAddr("127.0.0.1"), hostPort: 8081}},
		exposed:   []uint16{8080, 9000},
		addrs:     []endpoint{{"bridge", netip.MustParseAddr("172.17.0.3")}, {"appnet", netip.MustParseAddr("172.20.0.5")}},
	}
	if !n.equal(want) {
		t.Errorf("read %+v, want %+v", n, want)
	}
}

func TestDescribeProbe(t *testing.T) {
	for _, c := range []struct {
		ready *probe.Config
		host  string
		want  []string
	}{
		{&probe.Config{TCP: "127.0.0.1:8081"}, "unix:///var/run/docker.sock", []string{"tcp 127.0.0.1:8081 → ", "container's own address", "at each start", "else as given"}},
		{&probe.Config{TCP: "10.0.0.2:8081"}, "tcp://10.0.0.2:2376", []string{"tcp 10.0.0.2:8081, as given", "another machine"}},
		{&probe.Config{HTTP: "http://u:secret@127.0.0.1:8081/h"}, "unix:///x", []string{"http http://u:xxxxx@127.0.0.1:8081/h, as given"}},
		{nil, "unix:///x", []string{"no ready: tcp to the container's own address", "first published port", "only exposed port", "with neither port, ready once it runs"}},
		{nil, "tcp://10.0.0.2:2376", []string{"no ready: ready once it runs", "another machine"}},
	} {
		got := describeProbe(c.ready, c.host)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("describeProbe(%+v, %s) = %q, want %q in it", c.ready, c.host, got, w)
			}
		}
		if strings.Contains(got, "secret") {
			t.Errorf("describeProbe shows a password: %q", got)
		}
	}
}

// A container's own address that cannot be reached from reaper (not even
// refused: reaper in another network namespace, a rootless engine) makes the
// probe fall back to the address configured, once, with a warning.
func TestReadiness_UnreachableOwnAddressFallsBackToTheConfiguredProbe(t *testing.T) {
	proxy, err := net.Listen("tcp", "127.0.0.1:0") // stands for the port proxy: accepts at once
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	port := uint16(proxy.Addr().(*net.TCPAddr).Port)
	for _, c := range []struct {
		name  string
		ready *probe.Config
		want  string
	}{
		{"configured", &probe.Config{TCP: proxy.Addr().String()}, "tcp " + proxy.Addr().String()},
		{"default", nil, "none: ready once it runs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &logtest.Buffer{}
			d := &Driver{log: logs.Logger(slog.LevelDebug), prober: probe.New(nil)}
			defer d.prober.Close()
			a := newApp(spec{id: "web", container: "web-1", ready: c.ready}, &host{name: "local", local: true})
			a.v = &view{status: container.StateRunning, net: netView{
				published: []binding{{port: 8080, hostIP: netip.MustParseAddr("127.0.0.1"), hostPort: port}},
				// A link-local address without its zone: the connect fails
				// at once, and not with a refusal.
				addrs: []endpoint{{"bridge", netip.MustParseAddr("fe80::1")}},
			}}
			r := &readiness{d: d, a: a}
			if res := r.once(context.Background()); res != probe.Ready || !r.fellBack {
				t.Fatalf("probe %v, fell back %v; want Ready through the fallback", res, r.fellBack)
			}
			if !strings.HasPrefix(r.probed, c.want) {
				t.Errorf("probed %q, want %q", r.probed, c.want)
			}
			r.once(context.Background())
			if n := strings.Count(logs.String(), "own address cannot be reached"); n != 1 {
				t.Errorf("warned %d times, want once per wait:\n%s", n, logs.String())
			}
		})
	}
}

func TestConfig_ReadinessSaysWhatEachAppProbes(t *testing.T) {
	off := false
	c := Config{
		Hosts: []HostConfig{{Name: "here", Host: "unix:///run/docker.sock"}, {Name: "far", Host: "tcp://10.0.0.2:2376"}},
		Apps: []AppConfig{
			{ID: "web", Container: "web-1", Ready: &probe.Config{TCP: "127.0.0.1:8081"}},
			{ID: "api", Container: "api-1", Host: "far", Ready: &probe.Config{TCP: "10.0.0.2:8082"}},
			{ID: "db", Container: "db-1"},
		},
	}
	got := c.Readiness(func(string) (string, bool) { return "", false })
	want := []string{
		"web (container web-1, engine here): tcp 127.0.0.1:8081 → if the container publishes that port: the container's own address",
		"api (container api-1, engine far): tcp 10.0.0.2:8082, as given (the engine is on another machine",
		"db (container db-1, engine here): no ready: tcp to the container's own address on its first published port",
		"apps from labels on engine here: reaper.ready.tcp or reaper.ready.http as above; without them, no ready: tcp to the container's own address",
		"apps from labels on engine far: reaper.ready.tcp or reaper.ready.http as above; without them, no ready: ready once it runs",
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n%s\nwant it to start with\n%s", i, got[i], want[i])
		}
	}
	// One engine, from DOCKER_HOST, labels off: no engine named, no label line.
	c = Config{Labels: &off, Apps: []AppConfig{{ID: "web", Container: "web-1"}}}
	got = c.Readiness(func(k string) (string, bool) { return "tcp://10.0.0.2:2376", k == "DOCKER_HOST" })
	if len(got) != 1 || !strings.HasPrefix(got[0], "web (container web-1): no ready: ready once it runs") {
		t.Errorf("lines %q", got)
	}
}

package docker

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// The readiness of containers whose app opens its port a while after the
// container starts (--boot-delay), behind the engine's port proxy, which
// accepts on the published port at once.

// probedAt returns the addresses the log's lines msg (for app) say were probed,
// in order.
func (e *env) probedAt(msg, app string) []string {
	e.t.Helper()
	re := regexp.MustCompile(`probe="tcp ([^ "]+)`)
	var out []string
	for line := range strings.Lines(e.logs.String()) {
		if strings.Contains(line, `msg="`+msg+`"`) && strings.Contains(line, "app="+app+" ") {
			if m := re.FindStringSubmatch(line); m != nil {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// ip returns the container's address on a network.
func containerIP(t *testing.T, name, network string) string {
	t.Helper()
	return dockertest.Docker(t, "inspect", "--format", `{{(index .NetworkSettings.Networks "`+network+`").IPAddress}}`, name)
}

func TestDriver_TCPProbeOfThePublishedPortWaitsForTheApp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("slow", nil, "--boot-delay", "1s")
	d := e.driver(Config{Apps: []AppConfig{{ID: "slow", Container: name, Ready: &probe.Config{TCP: addr}}}})
	if err := d.Start(bg, paas.App{ID: "slow"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "slow", paas.StateShouldBeUp)
	if !answers(addr) {
		t.Fatal("observed up, but the app does not answer: the port proxy's accept was taken for the app's")
	}
	if bt := d.Measured(paas.App{ID: "slow"}).BootTime; bt < time.Second {
		t.Errorf("boot time %s, want at least the app's 1s boot", bt)
	}
	own := containerIP(t, name, "bridge") + ":8080"
	for _, msg := range []string{"container started", "container ready"} {
		if got := e.probedAt(msg, "slow"); len(got) != 1 || got[0] != own {
			t.Errorf("%q says it probes %v, want [%s]: the container's own address", msg, got, own)
		}
	}
}

// Without ready: the container's own address on its first published port;
// adopted by a new driver the same way.
func TestDriver_DefaultProbeIsTheFirstPublishedPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("dflt", []string{"-p", "127.0.0.1::9999"}, "--boot-delay", "1s")
	d := e.driver(Config{Apps: []AppConfig{{ID: "dflt", Container: name}}})
	if err := d.Start(bg, paas.App{ID: "dflt"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "dflt", paas.StateShouldBeUp)
	if !answers(addr) {
		t.Fatal("observed up, but the app does not answer")
	}
	own := containerIP(t, name, "bridge") + ":8080" // 8080 < 9999: the first
	if got := e.probedAt("container ready", "dflt"); len(got) != 1 || got[0] != own {
		t.Errorf("probed %v, want [%s]", got, own)
	}
	d.Close()
	e.driver(Config{Apps: []AppConfig{{ID: "dflt", Container: name}}})
	if n := e.logs.Lines(`msg="adopted a running container"`, "app=dflt", "ready=true", `probe="tcp `+own); n != 1 {
		t.Errorf("%d adoption lines with the container's own address, want 1:\n%s", n, e.logs.String())
	}
}

// On a network of its own, and started again after another container took its
// address: the probe follows the address the container has at each start.
func TestDriver_ProbeFollowsTheContainersAddressAtEachStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	netName := dockertest.Network(t, "appnet")
	name, addr := e.demo("moving", []string{"--network", netName}, "--boot-delay", "500ms")
	d := e.driver(Config{Apps: []AppConfig{{ID: "moving", Container: name, Ready: &probe.Config{TCP: addr}}}})
	if err := d.Start(bg, paas.App{ID: "moving"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "moving", paas.StateShouldBeUp)
	first := containerIP(t, name, netName)
	if err := d.Stop(bg, paas.App{ID: "moving"}); err != nil {
		t.Fatal(err)
	}
	// Another container on the network takes the address it gave back.
	filler := dockertest.Create(t, "filler", "--network", netName, e.image, "--listen", ":8080")
	dockertest.Docker(t, "start", filler)
	if got := containerIP(t, filler, netName); got != first {
		t.Logf("the engine gave %s another address (%s) than the one freed (%s)", filler, got, first)
	}
	if err := d.Start(bg, paas.App{ID: "moving"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "moving", paas.StateShouldBeUp)
	if !answers(addr) {
		t.Fatal("observed up after its second start, but the app does not answer")
	}
	second := containerIP(t, name, netName)
	if second == first {
		t.Fatalf("the container kept its address %s: the test proves nothing", first)
	}
	want := []string{first + ":8080", second + ":8080"}
	if got := e.probedAt("container ready", "moving"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("probed %v, want %v: its address on %s at each start", got, want, netName)
	}
}

// In the host's network the app listens on the host itself, with no port proxy:
// the probe is sent as given.
func TestDriver_HostNetworkIsProbedAsGiven(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := freeport.Addr(t)
	name := dockertest.Create(t, "hostnet", "--network", "host", e.image, "--listen", addr, "--name", "hostnet", "--shutdown-timeout", "1s", "--boot-delay", "500ms")
	d := e.driver(Config{Apps: []AppConfig{{ID: "hostnet", Container: name, Ready: &probe.Config{TCP: addr}}}})
	if err := d.Start(bg, paas.App{ID: "hostnet"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "hostnet", paas.StateShouldBeUp)
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		t.Fatalf("observed up, but nothing listens on %s: %v", addr, err)
	} else {
		c.Close()
	}
	if n := e.logs.Lines(`msg="container ready"`, "app=hostnet", `probe="tcp `+addr+`"`); n != 1 {
		t.Errorf("want one ready line probing %s as given:\n%s", addr, e.logs.String())
	}
}

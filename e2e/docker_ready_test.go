package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
)

// heldWake sends n requests at once to a sleeping app and returns how many got
// each answer ("200", "502 …", "error …").
func (e *dockerEnv) heldWake(id string, n int) map[string]int {
	e.t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			key := ""
			resp, err := e.p.request("GET", id+".test", "/", nil)
			if err != nil {
				key = "error " + err.Error()
			} else {
				body := readAll(e.t, resp)
				key = fmt.Sprint(resp.StatusCode)
				if resp.StatusCode != 200 {
					var answer struct {
						Error string `json:"error"`
					}
					_ = json.Unmarshal([]byte(body), &answer) // the request id would make each answer unique
					key += " " + cmp.Or(answer.Error, strings.TrimSpace(body))
				} else if !strings.Contains(body, `"name":"`+id+`"`) {
					key += " not the app's answer: " + body
				}
			}
			mu.Lock()
			got[key]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// describeCounts prints a map of answers, sorted.
func describeCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d × %s; ", m[k], k)
	}
	return b.String()
}

// The obvious configuration: a tcp probe of the port the container publishes.
// The engine's port proxy (docker-proxy) accepts on that port as soon as the
// container starts, before the app listens: probed there, the app was called
// ready at once and the held requests it released all got 502. The driver
// probes the container's own address instead (its IP, and the container port
// the published one maps to), read after each start.
func TestDocker_TCPProbeOfThePublishedPortReleasesHeldRequestsOnlyOnceTheAppListens(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	a := e.add(dockerApp{id: "slowtcp"}, nil, "--boot-delay", "1s")
	e.apps["slowtcp"].ready = fmt.Sprintf("{tcp: %q}", a.addr)
	e.start()
	e.waitStatus("slowtcp", "Down", 10*time.Second)
	if got := e.heldWake("slowtcp", 20); got["200"] != 20 {
		t.Fatalf("20 held requests on a wake: %s; want 20 × 200", describeCounts(got))
	}
	e.checkProbeLogged("slowtcp", a.container)
}

// Without ready, the default probe is the same: the container's own address
// and the container port of its first published port.
func TestDocker_DefaultProbeIsTheContainersOwnAddress(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	a := e.add(dockerApp{id: "noready", ready: "-"}, nil, "--boot-delay", "1s")
	e.start()
	e.waitStatus("noready", "Down", 10*time.Second)
	if got := e.heldWake("noready", 20); got["200"] != 20 {
		t.Fatalf("20 held requests on a wake: %s; want 20 × 200", describeCounts(got))
	}
	e.checkProbeLogged("noready", a.container)
}

// checkProbeLogged checks that the start's log line names the exact address
// probed: the container's IP on the bridge and its port 8080.
func (e *dockerEnv) checkProbeLogged(id, container string) {
	e.t.Helper()
	ip := dockertest.Docker(e.t, "inspect", "--format", "{{.NetworkSettings.Networks.bridge.IPAddress}}", container)
	want := "tcp " + ip + ":8080"
	l := e.p.waitLog(func(l map[string]any) bool { return l["msg"] == "container started" && l["app"] == id }, 5*time.Second)
	probe, _ := l["probe"].(string)
	if !strings.HasPrefix(probe, want) {
		e.t.Errorf("the start's log line says probe %q, want %q first (the container's address): %v", probe, want, l)
	}
	e.t.Logf("container started, probe %s", probe)
}

// A container declared in paas.docker.apps that also opted in with labels is
// one app, the declared one: its labels are ignored (logged once), so that the
// app its labels claim — here with a route of its own and a 1 s grace period —
// never drives the container the declared app woke.
func TestDocker_ContainerDeclaredAndLabelledIsOneApp(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	// An id of this test's own: every reaper on the engine discovers it.
	lbl := "lbl-" + strings.TrimPrefix(dockertest.Prefix, "reapertest-")
	a := e.add(dockerApp{id: "decl"}, []string{"--label", "reaper.enable=true", "--label", "reaper.app_id=" + lbl, "--label", "reaper.grace_period=1s"})
	// A route for the id the labels claim: as if the container had been
	// driven from its labels before it was declared.
	e.apps[lbl] = &dockerApp{id: lbl, container: a.container, addr: a.addr, labels: []string{}}
	p := e.start()
	e.waitStatus("decl", "Down", 10*time.Second)
	resp, err := p.request("GET", "decl.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("wake through the declared app: %d %s", resp.StatusCode, body)
	}
	// The labels' 1 s grace period is not the app's: the declared app's route
	// (60 s) keeps it awake, and no stop comes from the label side.
	woke := time.Now()
	if testwait.Until(4*time.Second, func() bool { return dockertest.State(t, a.container) != "running" }) {
		t.Fatalf("the container was put to sleep %s after the declared app woke it; logs:\n%s", time.Since(woke), warnLines(p))
	}
	if got := e.adminApp("decl")["status"]; got != "Up" {
		t.Errorf("declared app %v, want Up", got)
	}
	// The id the labels claim is no app of the driver's: its route's app is
	// one the platform does not know.
	if rec := e.adminApp(lbl); rec["status"] != "Error" {
		t.Errorf("the app the labels claim is %v: the driver should not know it (%v)", rec["status"], rec)
	}
	// (Other tests' labelled containers on the engine are discovered: only
	// this one's lines count.)
	if n := e.logLines(p, "app discovered from its container's labels", a.container); n != 0 {
		t.Errorf("the labels were read as an app %d times", n)
	}
	// Stopped and started by hand: events and passes, the warning still once.
	dockertest.Docker(t, "stop", "-t", "1", a.container)
	e.waitStatus("decl", "Down", 10*time.Second)
	dockertest.Docker(t, "start", a.container)
	e.waitStatus("decl", "Up", 10*time.Second)
	if n := e.logLines(p, "a container declared in paas.docker.apps also carries reaper.enable=true: it is the declared app only, its labels are ignored", a.container); n != 1 {
		t.Errorf("the labels ignored were logged %d times, want once:\n%s", n, warnLines(p))
	}
	if n := e.proxy.Calls("POST", "/containers/"+dockertest.ID(t, a.container)+"/stop"); n != 0 {
		t.Errorf("reaper stopped the container %d times; the declared app's grace period has not passed", n)
	}
}

// logLines counts reaper's log lines with message msg about container.
func (e *dockerEnv) logLines(p *reaperProc, msg, container string) int {
	n := 0
	for _, l := range p.logs() {
		if l["msg"] == msg && l["container"] == container {
			n++
		}
	}
	return n
}

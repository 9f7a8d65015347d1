//go:build linux

package multi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/paas/process"
)

// The contract runs through a Client over the two drivers that complement each
// other: the process driver (a paas.Watcher, neither a paas.BatchObserver nor a
// paas.DeploymentReader) and the Clever Cloud driver on its fake (the other way
// round). Through the Client, each member's apps must meet the whole contract:
// what a member lacks, the Client makes up for (ObserveAll observes its apps one
// by one, LastDeployment reads the observation's), except Watch, which reports
// only the apps of the members that watch.

const orga = "orga_aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"

// pair is a Client over a process driver and a Clever Cloud driver, with
// two apps on each.
type pair struct {
	c        *Client
	proc     [2]paas.App
	cc       [2]paas.App
	fake     *fakeclever.Fake
	spawns   func(t *testing.T, app paas.App) int
	serves   func(t *testing.T, app paas.App) bool
	never    paas.App
	keep     paas.App
	broken   paas.App
	procDrv  *process.Driver
	ccClient *clevercloud.Client
}

func newPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{}
	dir := t.TempDir()
	spawnFile := func(id string) string { return filepath.Join(dir, id+".spawns") }
	addrs := map[string]string{}
	var apps []process.AppConfig
	for i, id := range []string{"web", "api"} {
		addrs[id] = freeport.Addr(t)
		apps = append(apps, process.AppConfig{
			ID: id,
			// The shell notes each spawn, then becomes the app.
			Command: []string{"/bin/sh", "-c", `echo spawned >> "$0" && exec "$@"`, spawnFile(id),
				demoapp(t), "--listen", addrs[id], "--name", fmt.Sprintf("multi-%s-%d", id, time.Now().UnixNano())},
			Ready: process.ReadyConfig{TCP: addrs[id]},
		})
		p.proc[i] = paas.App{ID: id}
	}
	d, err := process.New(process.Options{DataDir: filepath.Join(dir, "data"), Apps: apps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Close leaves the apps running, for the next driver: stop them first.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, app := range p.proc {
			if err := d.Stop(ctx, app); err != nil {
				t.Errorf("stopping %s: %v", app, err)
			}
		}
		_ = d.Close()
	})
	p.procDrv = d
	p.spawns = func(t *testing.T, app paas.App) int {
		b, err := os.ReadFile(spawnFile(app.ID))
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("spawned\n"))
	}
	p.serves = func(_ *testing.T, app paas.App) bool {
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get("http://" + addrs[app.ID] + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}

	p.fake = fakeclever.New(fakeclever.Options{DeployDelay: 30 * time.Millisecond, BootTime: 60 * time.Millisecond,
		StopLinger: 60 * time.Millisecond})
	if err := p.fake.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.fake.Close)
	add := func(a fakeclever.App) paas.App {
		a.Owner = orga
		a = p.fake.AddApp(a)
		return paas.App{ID: a.ID, Owner: a.Owner}
	}
	p.cc = [2]paas.App{add(fakeclever.App{Name: "shop", State: fakeclever.StateShouldBeDown}),
		add(fakeclever.App{Name: "blog", State: fakeclever.StateShouldBeDown})}
	p.never = add(fakeclever.App{Name: "never", NeverDeployed: true})
	p.keep = add(fakeclever.App{Name: "keep", NotShutdownable: true})
	p.broken = add(fakeclever.App{Name: "broken", State: fakeclever.StateShouldBeDown})
	if err := p.fake.Console(p.broken.ID).FailNextDeployment(); err != nil {
		t.Fatal(err)
	}
	cc, err := clevercloud.New(clevercloud.Config{APIURL: p.fake.BridgeURL(), Token: conf.Secret(p.fake.Token())},
		clevercloud.Options{RetryBase: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond,
			RateLimitBase: 20 * time.Millisecond, RateLimitMax: 100 * time.Millisecond, GateWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.ccClient = cc
	p.c = New(nil, Driver{"process", d}, Driver{"clevercloud", cc})
	return p
}

func TestClient_Contract(t *testing.T) {
	t.Run("ProcessApps", func(t *testing.T) {
		paastest.Run(t, func(t *testing.T) paastest.Harness {
			p := newPair(t)
			return paastest.Harness{
				Client: p.c,
				Apps:   p.proc,
				// An id no driver owns: the Client's own not found.
				Unknown: paas.App{ID: "ghost"},
				Starts:  p.spawns,
				Serves:  p.serves,
			}
		})
	})
	t.Run("CleverCloudApps", func(t *testing.T) {
		paastest.Run(t, func(t *testing.T) paastest.Harness {
			p := newPair(t)
			return paastest.Harness{
				Client: p.c,
				Apps:   p.cc,
				// The Clever Cloud driver's own not found.
				Unknown: paas.App{ID: "app_00000000-0000-4000-8000-00000000dead", Owner: orga},
				Starts:  func(_ *testing.T, app paas.App) int { return p.fake.Starts(app.ID) },
				StopOutside: func(t *testing.T, app paas.App) {
					if err := p.fake.Console(app.ID).Stop(); err != nil {
						t.Fatal(err)
					}
				},
				Outage: func(*testing.T) func() {
					p.fake.Inject("", fakeclever.Fault{Kind: fakeclever.Fault5xx})
					return p.fake.ClearFaults
				},
				Failing:         p.broken,
				NeverDeployed:   p.never,
				NotShutdownable: p.keep,
				Lags:            true,
				Locks:           true,
				RestartsWhenUp:  true,
				Unwatched:       true,
			}
		})
	})
}

// TestClient_AMemberWithoutAnOptionalInterface pins what the Client answers for
// a member that lacks an interface the Client has.
func TestClient_AMemberWithoutAnOptionalInterface(t *testing.T) {
	p := newPair(t)
	ctx := t.Context()
	proc, cc := p.proc[0], p.cc[0]
	var _ paas.Watcher = p.procDrv
	if _, ok := any(p.ccClient).(paas.Watcher); ok {
		t.Fatal("the Clever Cloud driver became a paas.Watcher: this test needs a member that is none")
	}
	_, batch := any(p.procDrv).(paas.BatchObserver)
	_, reader := any(p.procDrv).(paas.DeploymentReader)
	if batch || reader {
		t.Fatal("the process driver became a paas.BatchObserver or a paas.DeploymentReader: this test needs a member that is neither")
	}

	// LastDeployment of a member that is no DeploymentReader is its observation's:
	// nil for an app it never started, the start once it started it.
	if dep, err := p.c.LastDeployment(ctx, proc); dep != nil || err != nil {
		t.Errorf("%s never started: LastDeployment %+v, %v; want nil, nil", proc, dep, err)
	}

	// Watch reports the apps of the members that watch, and those alone: reaper's
	// job observes the others on its ticks.
	var mu sync.Mutex
	heard := map[string]int{}
	p.c.Watch(ctx, func(id string) {
		mu.Lock()
		heard[id]++
		mu.Unlock()
	})
	count := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return heard[id]
	}
	for _, app := range []paas.App{proc, cc} {
		if err := p.c.Start(ctx, app); err != nil {
			t.Fatalf("Start(%s): %v", app, err)
		}
	}
	for _, app := range []paas.App{proc, cc} {
		testwait.For(t, 20*time.Second, app.ID+" up", func() bool {
			obs, err := p.c.Observe(ctx, app)
			return err == nil && obs.State == paas.StateShouldBeUp
		})
	}
	testwait.For(t, 20*time.Second, "Watch to report the process app", func() bool { return count(proc.ID) > 0 })
	if n := count(cc.ID); n != 0 {
		t.Errorf("Watch reported the Clever Cloud app %d times, want never (its driver does not watch)", n)
	}

	obs, err := p.c.Observe(ctx, proc)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := p.c.LastDeployment(ctx, proc)
	if err != nil || dep == nil || obs.Deployment == nil || *dep != *obs.Deployment {
		t.Errorf("%s up: LastDeployment %+v, %v; want its observation's %+v", proc, dep, err, obs.Deployment)
	}

	// ObserveAll observes the apps of a member that is no BatchObserver one by one,
	// and agrees with Observe for them as for the others.
	all, err := p.c.ObserveAll(ctx, []paas.App{proc, p.proc[1], cc, p.cc[1]})
	if err != nil || len(all) != 4 {
		t.Fatalf("ObserveAll: %v, %v; want the 4 apps", all, err)
	}
	want := map[paas.App]paas.State{proc: paas.StateShouldBeUp, p.proc[1]: paas.StateShouldBeDown,
		cc: paas.StateShouldBeUp, p.cc[1]: paas.StateShouldBeDown}
	for app, state := range want {
		if all[app].State != state {
			t.Errorf("ObserveAll: %s is %s, want %s", app, all[app].State, state)
		}
	}
}

var demoBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// demoapp builds the demo app once per test binary, and returns its path.
func demoapp(t *testing.T) string {
	t.Helper()
	demoBuild.once.Do(func() {
		if demoBuild.dir, demoBuild.err = os.MkdirTemp("", "reaper-multi-test-"); demoBuild.err != nil {
			return
		}
		demoBuild.path = filepath.Join(demoBuild.dir, "demoapp")
		out, err := exec.Command("go", "build", "-o", demoBuild.path, "github.com/reapergw/reaper/cmd/demoapp").CombinedOutput()
		if err != nil {
			demoBuild.err = fmt.Errorf("building the demo app: %v\n%s", err, out)
		}
	})
	if demoBuild.err != nil {
		t.Fatal(demoBuild.err)
	}
	return demoBuild.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if demoBuild.dir != "" {
		_ = os.RemoveAll(demoBuild.dir)
	}
	os.Exit(code)
}

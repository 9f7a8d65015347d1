package reaper

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"

	"github.com/reapergw/reaper/plugin"
)

func routesYAML(t *testing.T, src string) []plugin.RouteConfig {
	t.Helper()
	n, err := conf.Parse([]byte("routes:\n" + src))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Routes []plugin.RouteConfig `yaml:"routes"`
	}
	var errs conf.Errors
	d := conf.Decoder{Env: func(string) (string, bool) { return "", false }}
	d.Decode(n, &file, "", &errs)
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	return file.Routes
}

// A reload that fails while provisioning must leave the running routes' claims on
// their apps alone: the old router still serves them.
func TestEngine_AFailedReloadKeepsTheRunningRoutesClaims(t *testing.T) {
	engine := NewEngine(EngineOptions{Node: "n1", Store: newTestStore(t)})
	opts := plugin.BuildOptions{Logger: slog.New(slog.DiscardHandler), Services: map[string]any{ServiceName: engine}}
	good := `
- id: r1
  frontend: {domains: [a.localhost]}
  backend: {targets: ["http://127.0.0.1:1"]}
  plugins:
    - plugin: reaper
      config: {app_id: app-a}
`
	rt, err := plugin.BuildRouter(context.Background(), routesYAML(t, good), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if m := engine.Managed(); len(m) != 1 {
		t.Fatalf("managed before reload = %v", m)
	}
	// The new file adds a route whose reaper plugin fails to provision (no app_id,
	// nothing to guess it from).
	bad := good + `
- id: r2
  frontend: {domains: [b.localhost]}
  backend: {targets: ["http://127.0.0.1:2"]}
  plugins:
    - plugin: reaper
      config: {grace_period: 60}
`
	if _, err := plugin.BuildRouter(context.Background(), routesYAML(t, bad), opts); err == nil {
		t.Fatal("the bad reload built")
	}
	if m := engine.Managed(); len(m) != 1 {
		t.Errorf("after a failed reload, managed apps = %v; want app-a still managed by r1 (the running router serves it)", m)
	}
}

func newTestStore(t *testing.T) *MemStore {
	s, err := NewMemStore(MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Over reloads, the node lets go of the apps no route manages any more, but only
// once nothing passes through them and their traffic is in the store.
func TestEngine_ForgetsUnmanagedAppsOnceIdleAndFlushed(t *testing.T) {
	store := newTestStore(t)
	e := NewEngine(EngineOptions{Node: "n1", Store: store})
	cfg := DefaultConfig()
	cfg.AppID = "gone"
	e.Register("r1", "r1", &cfg, nil)
	a := e.app("gone")
	end := a.begin()
	e.Unregister("r1", "gone", &cfg)
	e.Flush(context.Background())
	if e.app("gone") != a {
		t.Fatal("an app with a request in flight was forgotten")
	}
	end() // the request ends: its access time is not in the store yet
	e.sweep()
	if e.app("gone") != a {
		t.Fatal("an app whose last access was not flushed was forgotten")
	}
	e.Flush(context.Background())
	if e.app("gone") != nil {
		t.Fatal("an unmanaged, idle, flushed app is still known")
	}
	if la, _ := store.LastAccess(context.Background()); la["gone"].IsZero() {
		t.Error("its last access did not reach the store")
	}
	e.Register("r2", "r2", &cfg, nil)
	if b := e.app("gone"); b == nil || b == a || len(e.Managed()) != 1 {
		t.Errorf("managed again: app %p (was %p), managed %v", b, a, e.Managed())
	}
}

// A reload that takes apps out of their group leaves each to its own policy.
// The group removed while its members are up (groupEnv: web 10 min and api
// 5 min on their routes, web on api; worker with no route): web sleeps on its
// routes' grace period, api after it, and worker, with no route, once idle
// for DefaultGracePeriod — never left running. Worker taken out of a group
// that sleeps stays asleep: nothing wakes it, it is no app no route manages
// any more.
func TestJob_AReloadThatTakesAppsOutOfTheirGroupLeavesEachToItsOwnPolicy(t *testing.T) {
	deps := map[string][]string{"web": {"api"}}
	dependsOn := func(id string) []string { return deps[id] }
	t.Run("the group removed while up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e, fake := groupEnv(t)
			e.start()
			defer e.stop()
			settle()
			wakeGroup(t, e)
			e.engine.SetTopology(Topology{DependsOn: dependsOn}) // the reload: groups[] gone
			if n := e.logs.Lines("an app left its group on reload", "app=worker", "group=shop"); n != 1 {
				t.Errorf("worker's leaving logged %d times, want once", n)
			}
			idleFor(12 * time.Minute) // web's 10 min, then api after it
			for id, want := range map[string]Status{"web": StatusDown, "api": StatusDown, "worker": StatusUp} {
				if r, _ := e.engine.Record(id); r.Status != want {
					t.Errorf("12 min after the reload, %s is %s (%s), want %s", id, r.Status, r.Cause, want)
				}
			}
			if calls := startsAndStops(fake); !slices.Equal(calls[len(calls)-2:], []string{"stop web", "stop api"}) {
				t.Errorf("calls %v, want web stopped, then api", calls)
			}
			idleFor(DefaultGracePeriod - 12*time.Minute + 2*time.Minute)
			if r, _ := e.engine.Record("worker"); r.Status != StatusDown || fake.Count("stop", "worker") != 1 {
				t.Errorf("worker idle past %s: %s (%s), %d stops; want put to sleep once", DefaultGracePeriod, r.Status, r.Cause, fake.Count("stop", "worker"))
			}
			var worker *ManagedApp
			for _, m := range e.engine.Managed() {
				if m.App.ID == "worker" {
					worker = &m
				}
			}
			if worker == nil || worker.Group != "" || worker.Policy.GracePeriod != DefaultGracePeriod {
				t.Errorf("worker managed as %+v, want managed alone, on the default grace period", worker)
			}
		})
	})
	t.Run("an app taken out of its group asleep", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e, fake := groupEnv(t)
			e.start()
			defer e.stop()
			settle()
			wakeGroup(t, e)
			idleFor(12 * time.Minute) // the group's grace period (10 min): all asleep
			if r, _ := e.engine.Record("worker"); r.Status != StatusDown {
				t.Fatalf("worker: %s, want Down with its group", r.Status)
			}
			// The reload: worker out of shop, which keeps web and api.
			e.engine.SetTopology(Topology{Groups: []Group{{ID: "shop", Apps: []string{"web", "api"}}}, DependsOn: dependsOn})
			idleFor(unmanagedGrace + time.Minute) // full passes, and the time an app no route manages would be forgotten in
			if r, ok := e.engine.Record("worker"); !ok || r.Status != StatusDown || fake.Count("start", "worker") != 1 {
				t.Errorf("worker after the reload: %v %s (%s), %d starts; want known, asleep, not woken again", ok, r.Status, r.Cause, fake.Count("start", "worker"))
			}
		})
	})
}

// An app a reload takes out of its group and that its driver no longer has
// (a paas.Owner that does not own it: a discovered container relabelled) is
// not managed on its own: it is nothing of reaper's any more. One the driver still owns is, on the default
// policy.
func TestEngine_AFormerMemberTheDriverNoLongerOwnsIsNotManaged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := groupEnv(t)
		hints := &owningHints{owned: map[string]bool{"web": true, "api": true}}
		e.engine.opts.Policies = hints
		e.engine.SetTopology(Topology{}) // the reload: groups[] gone; worker no longer the driver's
		managed := func() map[string]ManagedApp {
			out := map[string]ManagedApp{}
			for _, m := range e.engine.Managed() {
				out[m.App.ID] = m
			}
			return out
		}
		if m, ok := managed()["worker"]; ok {
			t.Errorf("worker managed as %+v once the driver no longer owns it", m)
		}
		hints.owned["worker"] = true
		if m, ok := managed()["worker"]; !ok || m.Policy.GracePeriod != DefaultGracePeriod || m.Group != "" {
			t.Errorf("worker (owned) managed %v as %+v, want alone on the default grace period", ok, m)
		}
	})
}

// owningHints gives no hint and owns the apps of owned (paas.Owner).
type owningHints struct{ owned map[string]bool }

func (*owningHints) AppPolicy(paas.App) (paas.PolicyHint, error) { return paas.PolicyHint{}, nil }
func (o *owningHints) Owns(id string) bool                       { return o.owned[id] }

package reaper

import (
	"context"
	"log/slog"
	"testing"

	"github.com/reapergw/reaper/internal/conf"

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

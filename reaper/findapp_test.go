package reaper

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/reapergw/reaper/plugin"
)

// A route whose plugin names no app, and from which nothing guesses it, gets the
// app FindApp finds for it; FindApp's error fails the route at its app_id.
func TestPlugin_FindAppForARouteThatNamesNone(t *testing.T) {
	var asked [][]string
	find := func(_ context.Context, r *plugin.RouteConfig) (string, error) {
		asked = append(asked, r.Frontend.Domains)
		if r.Frontend.Domains[0] == "shop.example.com" {
			return "app_shop", nil
		}
		return "", errors.New("clevercloud: mixed.example.com is a vhost of app_a and app_b: set app_id")
	}
	engine := NewEngine(EngineOptions{Node: "n1", Store: newTestStore(t), FindApp: find,
		GuessAppID: func(*plugin.RouteConfig) (string, bool) { return "", false }})
	opts := plugin.BuildOptions{Logger: slog.New(slog.DiscardHandler), Services: map[string]any{ServiceName: engine}}
	good := `
- id: shop
  frontend: {domains: [shop.example.com]}
  backend: {targets: ["https://shop.example.com"]}
  plugins:
    - plugin: reaper
      config: {grace_period: 60}
- id: named
  frontend: {domains: [named.example.com]}
  backend: {targets: ["https://named.example.com"]}
  plugins:
    - plugin: reaper
      config: {app_id: app_named}
`
	rt, err := plugin.BuildRouter(context.Background(), routesYAML(t, good), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if len(asked) != 1 || asked[0][0] != "shop.example.com" {
		t.Errorf("FindApp asked for %v, want the route without app_id only", asked)
	}
	var ids []string
	for _, m := range engine.Managed() {
		ids = append(ids, m.App.ID)
	}
	if strings.Join(ids, ",") != "app_named,app_shop" && strings.Join(ids, ",") != "app_shop,app_named" {
		t.Errorf("managed apps %v, want app_shop and app_named", ids)
	}

	bad := `
- id: mixed
  frontend: {domains: [mixed.example.com]}
  backend: {targets: ["https://mixed.example.com"]}
  plugins:
    - plugin: reaper
      config: {grace_period: 60}
`
	_, err = plugin.BuildRouter(context.Background(), routesYAML(t, bad), opts)
	want := "routes[0].plugins[0].config.app_id: not set, and the app could not be found by the route's domains: clevercloud: mixed.example.com is a vhost of app_a and app_b: set app_id"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

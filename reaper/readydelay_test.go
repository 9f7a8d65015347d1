package reaper

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/plugin"
)

// With several drivers, each app has its driver's default wait after Up; a
// route's ready_delay still wins.
func TestPlugin_ReadyDelayDefaultsPerApp(t *testing.T) {
	engine := NewEngine(EngineOptions{Node: "n1", Store: newTestStore(t), ReadyDelay: time.Hour,
		ReadyDelayFor: func(id string) time.Duration {
			if id == "app_1" {
				return 3 * time.Second
			}
			return 0
		}})
	seven := conf.Duration(7 * time.Second)
	cases := []struct {
		app   string
		route *conf.Duration
		want  time.Duration
	}{
		{"app_1", nil, 3 * time.Second},
		{"demo", nil, 0},
		{"demo", &seven, 7 * time.Second},
	}
	for i, c := range cases {
		cfg := DefaultConfig()
		cfg.AppID, cfg.ReadyDelay = c.app, c.route
		p := &Plugin{Config: cfg}
		err := p.Provision(plugin.ProvisionContext{
			Context:  context.Background(),
			Logger:   slog.New(slog.DiscardHandler),
			Route:    &plugin.RouteConfig{ID: "r" + string(rune('0'+i))},
			Path:     "routes[0].plugins[0].config",
			Services: map[string]any{ServiceName: engine},
		})
		if err != nil {
			t.Fatal(err)
		}
		if p.route.ReadyDelay() != c.want {
			t.Errorf("%s (route's ready_delay %v): ready delay %v, want %v", c.app, c.route, p.route.ReadyDelay(), c.want)
		}
	}
}

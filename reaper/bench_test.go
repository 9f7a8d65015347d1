package reaper

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/plugin"
)

var benchSink *plugin.Exchange

// BenchmarkValidateAccess_Awake is the reaper plugin's cost on every request for an
// awake app: classify, admit, and the end of the request (its OnDone).
func BenchmarkValidateAccess_Awake(b *testing.B) {
	store, err := NewMemStore(MemStoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	engine := NewEngine(EngineOptions{Node: "n1", Store: store})
	cfg := DefaultConfig()
	cfg.AppID = "app"
	cfg.MonitoringFilters = []MonitoringFilter{{Source: "user_agent", Regex: "(?i)uptimerobot"}}
	var errs conf.Errors
	cfg.Validate("config", &errs)
	if err := errs.Err(); err != nil {
		b.Fatal(err)
	}
	p := &Plugin{Config: cfg}
	if err := p.Provision(plugin.ProvisionContext{
		Context:  context.Background(),
		Logger:   slog.New(slog.DiscardHandler),
		Route:    &plugin.RouteConfig{ID: "route"},
		Path:     "config",
		Services: map[string]any{ServiceName: engine},
	}); err != nil {
		b.Fatal(err)
	}
	engine.Apply(Record{AppID: "app", Status: StatusUp, LastUpAt: time.Now()})
	req := httptest.NewRequest("GET", "/api/items", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "curl/8.0")
	b.ReportAllocs()
	for b.Loop() {
		// On the heap, as in the gateway (where it is part of the request's state).
		ex := &plugin.Exchange{Request: req, ID: "r"}
		benchSink = ex
		if a, err := p.ValidateAccess(ex); a != nil || err != nil {
			b.Fatalf("an awake app's request was answered: %v %v", a, err)
		}
	}
}

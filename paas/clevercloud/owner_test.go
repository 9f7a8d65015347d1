package clevercloud

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestClient_OwnerFinder(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, func(_ *fakeclever.Fake, _ *Config, o *Options) { o.OwnerRefresh = time.Hour })
	a := e.f.AddApp(fakeclever.App{Owner: orga})
	ctx := context.Background()
	if owner, err := e.c.Owner(ctx, a.ID); err != nil || owner != orga {
		t.Fatalf("owner %q, %v", owner, err)
	}
	// Cached: no second summary; an unknown app does not cause one either within
	// OwnerRefresh, however often it is asked.
	for range 5 {
		if owner, _ := e.c.Owner(ctx, a.ID); owner != orga {
			t.Fatal("cache lost")
		}
		if _, err := e.c.Owner(ctx, "app_unknown"); !errors.Is(err, paas.ErrNotFound) {
			t.Fatalf("unknown app: %v", err)
		}
	}
	// Start on an app without owner uses the cache.
	if err := e.c.Start(ctx, paas.App{ID: a.ID}); err != nil {
		t.Fatal(err)
	}
	if got := e.calls(""); len(got) != 2 || got[0] != "GET /v2/summary" ||
		got[1] != "POST /v2/organisations/"+orga+"/applications/"+a.ID+"/instances" {
		t.Errorf("calls %v", got)
	}
}

func TestClient_OwnerDefaultFromConfig(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, func(_ *fakeclever.Fake, c *Config, _ *Options) { c.OwnerID = orga })
	a := e.f.AddApp(fakeclever.App{Owner: orga})
	if _, err := e.c.Observe(context.Background(), paas.App{ID: a.ID}); err != nil {
		t.Fatal(err)
	}
	if got := e.calls(""); len(got) != 1 || got[0] != "GET /v2/organisations/"+orga+"/applications/"+a.ID {
		t.Errorf("calls %v (no summary expected)", got)
	}
}

func TestClient_ConcurrentOwnerLookupsShareOneSummary(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, nil)
	var ids []string
	for range 20 {
		ids = append(ids, e.f.AddApp(fakeclever.App{Owner: orga}).ID)
	}
	e.f.Inject("", fakeclever.Fault{Kind: fakeclever.FaultSlow, Count: 1, Delay: 50 * time.Millisecond})
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() {
			_, err := e.c.Owner(context.Background(), id)
			errs <- err
		}()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := e.calls("/v2/summary"); len(got) != 1 {
		t.Errorf("%d summary calls, want 1", len(got))
	}
}

package clevercloud

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestClient_DetailsAndPrices(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, oauthConfigMod)
	a := e.f.AddApp(fakeclever.App{Owner: orga, Name: "shop", Zone: "rbx", Flavor: "M", VHosts: []string{"shop.example.com"}})
	d, err := e.c.Details(context.Background(), paas.App{ID: a.ID, Owner: orga})
	if err != nil {
		t.Fatal(err)
	}
	want := Details{ID: a.ID, Name: "shop", Owner: orga, Zone: "rbx", Flavor: "M", PriceID: "apps.M", MemoryMiB: 4096,
		MinInstances: 1, MaxInstances: 1, VHosts: []string{fakeclever.DefaultDomain(a.ID), "shop.example.com"}, Shutdownable: true}
	if fmt.Sprint(d) != fmt.Sprint(want) {
		t.Errorf("details\n%+v\nwant\n%+v", d, want)
	}
	prices, err := e.c.Prices(context.Background(), "rbx", "")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range prices {
		if p.SlugID == d.PriceID && p.Price > 0 && p.Per == time.Hour {
			found = true
		}
	}
	if !found {
		t.Errorf("no hourly price for %s in %+v", d.PriceID, prices)
	}
	if calls := e.calls("/v4/"); len(calls) != 1 || calls[0] != "GET /v4/billing/price-system?currency=EUR&zone_id=rbx" {
		t.Errorf("calls %v", calls)
	}
	if _, err := e.c.Prices(context.Background(), "mars", "EUR"); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("unknown zone: %v", err)
	}
}

func oauthConfigMod(f *fakeclever.Fake, c *Config, _ *Options) { oauthConfig(f, c) }

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT1H": time.Hour, "PT1M": time.Minute, "P1D": 24 * time.Hour,
		"PT1H30M": 90 * time.Minute, "P30D": 720 * time.Hour, "PT10S": 10 * time.Second} {
		if got, ok := parseISODuration(in); !ok || got != want {
			t.Errorf("%s: %v %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "P", "PT", "P1M", "1H", "PT0S", "P1Y"} {
		if _, ok := parseISODuration(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// An app's cost: its flavour's hourly price in its zone times its instances,
// its memory the flavour's; both reads cached.
func TestClient_CostPricesTheFlavourAndCaches(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, oauthConfigMod)
	a := e.f.AddApp(fakeclever.App{Owner: orga, Name: "shop", Zone: "rbx", Flavor: "M"})
	app := paas.App{ID: a.ID, Owner: orga}
	for range 3 {
		c, err := e.c.Cost(context.Background(), app)
		if err != nil {
			t.Fatal(err)
		}
		if c.Currency != "EUR" || c.PerHour != 0.1111 || c.MemoryBytes != 4096<<20 {
			t.Fatalf("cost %+v; want 0.1111 EUR an hour and 4 GiB (the fake's M)", c)
		}
	}
	if n := len(e.calls("/v4/billing")); n != 1 {
		t.Errorf("three costs read the prices %d times, want once", n)
	}
	if n := len(e.calls("/applications/" + a.ID)); n != 1 {
		t.Errorf("three costs read the app %d times, want once", n)
	}
}

func TestCostOf(t *testing.T) {
	ps := []Price{{SlugID: "apps.XS", Price: 0.5, Per: 30 * time.Minute}, {SlugID: "apps.S", Price: 24, Per: 24 * time.Hour}}
	for _, c := range []struct {
		d           Details
		perHour     float64
		memoryBytes int64
	}{
		{Details{PriceID: "apps.XS", MemoryMiB: 1024, MinInstances: 2}, 2, 2 << 30},
		{Details{PriceID: "APPS.S", MemoryMiB: 2048}, 1, 2 << 30},
		{Details{PriceID: "apps.unknown", MemoryMiB: 512, MinInstances: 1}, 0, 512 << 20},
	} {
		got := costOf(c.d, ps)
		if got.PerHour != c.perHour || got.MemoryBytes != c.memoryBytes || got.Currency != "EUR" {
			t.Errorf("costOf(%+v) = %+v, want %v EUR/h and %d bytes", c.d, got, c.perHour, c.memoryBytes)
		}
	}
}

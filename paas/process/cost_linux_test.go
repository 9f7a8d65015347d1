package process

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/paas"
)

// An app's cost is its configured price and the resident memory of its process
// group: measured while it runs, remembered once it stopped. Measured gives that
// memory and the start's boot time without measuring anything.
func TestDriver_CostIsThePriceAndTheGroupsMemory(t *testing.T) {
	cfg := demo(t, "hello", freeport.Addr(t))
	cfg.PricePerHour, cfg.Currency = 0.25, "USD"
	d, _ := newDriver(t, "", cfg)
	r := watch(t, d)
	app := paas.App{ID: "hello"}
	if c, err := d.Cost(t.Context(), app); err != nil || c.PerHour != 0.25 || c.Currency != "USD" || c.MemoryBytes != 0 {
		t.Fatalf("before it ever ran: %+v, %v; want the price and no memory", c, err)
	}
	if m := d.Measured(app); m != (paas.Measures{}) {
		t.Fatalf("measured before it ever ran: %+v", m)
	}
	began := time.Now()
	start(t, d, "hello")
	r.untilState(t, "hello", paas.StateShouldBeUp)
	took := time.Since(began)
	if m := d.Measured(app); m.BootTime <= 0 || m.BootTime > took || m.MemoryBytes != 0 {
		t.Fatalf("measured once ready: %+v; want a boot time within the %s the start took, no memory yet", m, took)
	}
	running, err := d.Cost(t.Context(), app)
	if err != nil || running.MemoryBytes < 1<<20 || running.MemoryBytes > 1<<30 {
		t.Fatalf("running: %+v, %v; want the demo app's resident memory (1 MiB to 1 GiB)", running, err)
	}
	stop(t, d, "hello")
	if c, err := d.Cost(t.Context(), app); err != nil || c.MemoryBytes != running.MemoryBytes {
		t.Fatalf("stopped: %+v, %v; want the memory it held when last measured, %d", c, err, running.MemoryBytes)
	}
	if m := d.Measured(app); m.MemoryBytes != running.MemoryBytes || m.MemoryAt.IsZero() {
		t.Errorf("measured once stopped: %+v, want the memory Cost read (%d) and when", m, running.MemoryBytes)
	}
	if _, err := d.Cost(t.Context(), paas.App{ID: "nope"}); err == nil {
		t.Fatal("an unknown app has a cost")
	}
}

func TestAppConfig_PriceAndCurrencyAreChecked(t *testing.T) {
	for _, c := range []struct {
		price    float64
		currency string
		bad      string
	}{
		{0, "", ""}, {1.5, "EUR", ""}, {-1, "", "price_per_hour"}, {1, "euro", "currency"}, {1, "eur", "currency"},
	} {
		cfg := AppConfig{ID: "a", Command: []string{"x"}, Ready: ReadyConfig{TCP: "127.0.0.1:1"}, PricePerHour: c.price, Currency: c.currency}
		err := validateAll([]AppConfig{cfg})
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("price %v %q: %v, want valid", c.price, c.currency, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), "paas.apps[0]."+c.bad)):
			t.Errorf("price %v %q: %v, want an error naming paas.apps[0].%s", c.price, c.currency, err, c.bad)
		}
	}
}

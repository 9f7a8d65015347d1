package clevercloud

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/paas"
)

// Details is what reaper needs of an app beyond its state: where it runs and its
// size, to price the time it sleeps.
type Details struct {
	ID, Name, Owner string
	Zone            string
	// Flavor is the size of one instance (minFlavor.name, e.g. "XS"); PriceID is
	// its slug in the price system (e.g. "apps.XS").
	Flavor, PriceID            string
	MemoryMiB                  int // of one instance of Flavor
	MinInstances, MaxInstances int
	// VHosts are the app's domains, without the trailing slash the API writes.
	VHosts []string
	// Shutdownable is deployment.shutdownable (true when the API does not say).
	Shutdownable bool
}

// Details reads the app (GET {owner}/applications/{id}). Errors are those of
// Observe.
func (c *Client) Details(ctx context.Context, app paas.App) (Details, error) {
	j, err := c.getApp(ctx, app, "read")
	if err != nil {
		return Details{}, err
	}
	owner := j.OwnerID
	if owner == "" {
		owner, _ = c.owners.get(app.ID)
	}
	d := Details{ID: j.ID, Name: j.Name, Owner: owner, Zone: j.Zone, Flavor: j.Instance.MinFlavor.Name,
		PriceID: j.Instance.MinFlavor.PriceID, MemoryMiB: j.Instance.MinFlavor.Mem, MinInstances: j.Instance.MinInstances,
		MaxInstances: j.Instance.MaxInstances, Shutdownable: j.Deployment.Shutdownable == nil || *j.Deployment.Shutdownable}
	for _, v := range j.VHosts {
		if h := strings.TrimSuffix(strings.TrimSpace(v.FQDN), "/"); h != "" {
			d.VHosts = append(d.VHosts, h)
		}
	}
	return d, nil
}

// Price is the price of one runtime size in the price system.
type Price struct {
	SlugID string  // e.g. apps.XS
	Price  float64 // in the currency asked, per Per
	Per    time.Duration
}

// Prices reads the runtime prices of a zone (GET
// /v4/billing/price-system?zone_id=&currency=); currency defaults to EUR. Prices
// whose time unit is not an ISO 8601 duration are skipped. Errors are those of
// Observe.
func (c *Client) Prices(ctx context.Context, zone, currency string) ([]Price, error) {
	if currency == "" {
		currency = "EUR"
	}
	req := request{op: "read the prices of zone " + zone, method: http.MethodGet, path: "/v4/billing/price-system",
		query: map[string]string{"zone_id": zone, "currency": currency}, safe: true}
	body, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	var ps struct {
		Runtime []struct {
			SlugID   string          `json:"slug_id"`
			Price    json.RawMessage `json:"price"`
			TimeUnit string          `json:"time_unit"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal(body, &ps); err != nil {
		return nil, c.fail(req, "the answer is not a price system", paas.ErrUnavailable)
	}
	var out []Price
	for _, r := range ps.Runtime {
		// The price may come as a number or as a string holding one.
		raw := string(bytes.Trim(r.Price, `"`))
		p, err := strconv.ParseFloat(raw, 64)
		per, ok := parseISODuration(r.TimeUnit)
		if err != nil || !ok || r.SlugID == "" {
			continue
		}
		out = append(out, Price{SlugID: r.SlugID, Price: p, Per: per})
	}
	return out, nil
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$`)

// parseISODuration reads the ISO 8601 durations the price system uses (PT1H,
// PT1M, P1D, P30D, PT1H30M); years and months are not fixed lengths and are refused.
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || s == "PT" {
		return 0, false
	}
	units := []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second}
	var d time.Duration
	for i, u := range units {
		if m[i+1] != "" {
			n, err := strconv.Atoi(m[i+1])
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * u
		}
	}
	return d, d > 0
}

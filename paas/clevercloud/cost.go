package clevercloud

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas"
)

var _ paas.Pricer = (*Client)(nil)

// costTTL is how long an app's size and a zone's prices are kept: both change
// rarely, and each costs an API call.
const costTTL = time.Hour

// costCache keeps what Cost read.
type costCache struct {
	mu     sync.Mutex
	apps   map[string]cachedDetails // app id →
	prices map[string]cachedPrices  // zone →
}

type cachedDetails struct {
	d  Details
	at time.Time
}

type cachedPrices struct {
	ps []Price
	at time.Time
}

// Cost implements paas.Pricer, as the reference reaper prices an app: its
// minimum flavour (minFlavor.price_id) in the price system of its zone, in EUR,
// times its minimum instance count; the memory is the flavour's times the
// instances. Both reads are cached for costTTL.
func (c *Client) Cost(ctx context.Context, app paas.App) (paas.Cost, error) {
	d, err := c.cachedDetails(ctx, app)
	if err != nil {
		return paas.Cost{}, err
	}
	ps, err := c.cachedPrices(ctx, d.Zone)
	if err != nil {
		return paas.Cost{}, err
	}
	return costOf(d, ps), nil
}

// costOf prices one app from its details and its zone's prices (pure).
func costOf(d Details, ps []Price) paas.Cost {
	n := max(d.MinInstances, 1)
	cost := paas.Cost{Currency: "EUR", MemoryBytes: int64(d.MemoryMiB) * int64(n) << 20}
	for _, p := range ps {
		if strings.EqualFold(p.SlugID, d.PriceID) && p.Per > 0 {
			cost.PerHour = p.Price * float64(time.Hour) / float64(p.Per) * float64(n)
			break
		}
	}
	return cost
}

func (c *Client) cachedDetails(ctx context.Context, app paas.App) (Details, error) {
	c.costs.mu.Lock()
	hit, ok := c.costs.apps[app.ID]
	c.costs.mu.Unlock()
	if ok && time.Since(hit.at) < costTTL {
		return hit.d, nil
	}
	d, err := c.Details(ctx, app)
	if err != nil {
		return Details{}, err
	}
	c.costs.mu.Lock()
	if c.costs.apps == nil {
		c.costs.apps = map[string]cachedDetails{}
	}
	c.costs.apps[app.ID] = cachedDetails{d, time.Now()}
	c.costs.mu.Unlock()
	return d, nil
}

func (c *Client) cachedPrices(ctx context.Context, zone string) ([]Price, error) {
	c.costs.mu.Lock()
	hit, ok := c.costs.prices[zone]
	c.costs.mu.Unlock()
	if ok && time.Since(hit.at) < costTTL {
		return hit.ps, nil
	}
	ps, err := c.Prices(ctx, zone, "EUR")
	if err != nil {
		return nil, err
	}
	c.costs.mu.Lock()
	if c.costs.prices == nil {
		c.costs.prices = map[string]cachedPrices{}
	}
	c.costs.prices[zone] = cachedPrices{ps, time.Now()}
	c.costs.mu.Unlock()
	return ps, nil
}

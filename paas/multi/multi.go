// Package multi serves several platform drivers side by side behind one
// paas.Client (paas.driver: [process, docker]): each app goes to the driver
// that owns it (paas.Owner), and every optional interface reaper uses is
// delegated to that driver when it has it.
package multi

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/reapergw/reaper/paas"
)

var (
	_ paas.Client           = (*Client)(nil)
	_ paas.Owner            = (*Client)(nil)
	_ paas.BatchObserver    = (*Client)(nil)
	_ paas.DeploymentReader = (*Client)(nil)
	_ paas.Watcher          = (*Client)(nil)
	_ paas.Pricer           = (*Client)(nil)
	_ paas.Meter            = (*Client)(nil)
	_ paas.PolicyHinter     = (*Client)(nil)
	_ paas.ReadinessWaiter  = (*Client)(nil)
)

// Driver is one of the drivers: its name (for the logs) and the driver, which
// must tell its apps (paas.Owner).
type Driver struct {
	Name   string
	Client interface {
		paas.Client
		paas.Owner
	}
}

// maxWarned bounds the app ids whose double claim was logged.
const maxWarned = 1024

// Client routes each app to its driver. The drivers are asked in the order
// given, and the first that owns an app serves it: list the drivers whose apps
// are declared (process) before those that discover them (docker's labels), so
// that an id claimed by both goes to the declared one. Such a double claim is
// logged once per app.
type Client struct {
	drivers []Driver
	log     *slog.Logger

	mu     sync.Mutex
	warned map[string]bool
}

// New returns a Client over drivers, in their order of precedence. log may be
// nil (no logs).
func New(log *slog.Logger, drivers ...Driver) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{drivers: drivers, log: log, warned: map[string]bool{}}
}

// owner returns the index of the driver that owns the app id, or -1.
func (c *Client) owner(id string) int {
	first := -1
	for i, d := range c.drivers {
		if !d.Client.Owns(id) {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		c.warnTwice(id, c.drivers[first].Name, d.Name)
		break
	}
	return first
}

// warnTwice logs, once per app, that two drivers claim it.
func (c *Client) warnTwice(id, kept, other string) {
	c.mu.Lock()
	seen := c.warned[id] || len(c.warned) >= maxWarned
	if !seen {
		c.warned[id] = true
	}
	c.mu.Unlock()
	if !seen {
		c.log.Warn("two drivers claim the app: the first listed serves it", "app", id, "driver", kept, "ignored", other)
	}
}

// driverOf returns the app's driver, or an error wrapping paas.ErrNotFound.
func (c *Client) driverOf(app paas.App) (paas.Client, error) {
	i := c.owner(app.ID)
	if i < 0 {
		return nil, fmt.Errorf("paas: app %q is not an app of any driver (%s): %w", app.ID, c.names(), paas.ErrNotFound)
	}
	return c.drivers[i].Client, nil
}

// names lists the drivers' names, for errors.
func (c *Client) names() string {
	names := make([]string, len(c.drivers))
	for i, d := range c.drivers {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// Owns reports whether one of the drivers owns the app.
func (c *Client) Owns(appID string) bool { return c.owner(appID) >= 0 }

// Observe asks the app's driver.
func (c *Client) Observe(ctx context.Context, app paas.App) (paas.Observation, error) {
	d, err := c.driverOf(app)
	if err != nil {
		return paas.Observation{}, err
	}
	return d.Observe(ctx, app)
}

// Start asks the app's driver.
func (c *Client) Start(ctx context.Context, app paas.App) error {
	d, err := c.driverOf(app)
	if err != nil {
		return err
	}
	return d.Start(ctx, app)
}

// Stop asks the app's driver.
func (c *Client) Stop(ctx context.Context, app paas.App) error {
	d, err := c.driverOf(app)
	if err != nil {
		return err
	}
	return d.Stop(ctx, app)
}

// DriverOf returns the name of the app's driver, or "" when none owns it.
func (c *Client) DriverOf(appID string) string {
	if i := c.owner(appID); i >= 0 {
		return c.drivers[i].Name
	}
	return ""
}

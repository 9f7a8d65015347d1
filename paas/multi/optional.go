package multi

import (
	"context"

	"github.com/reapergw/reaper/paas"
)

// ObserveAll groups the apps by driver: one ObserveAll for each driver that
// has it, one Observe per app for the others (from memory for the process and
// docker drivers). An app that no driver owns, whose observation failed, or
// whose driver's batch failed is absent from the result, as the contract of
// paas.BatchObserver allows: the caller observes it alone, and meets the error
// there. So one platform failing never blinds reaper to the others' apps.
func (c *Client) ObserveAll(ctx context.Context, apps []paas.App) (map[paas.App]paas.Observation, error) {
	groups := make([][]paas.App, len(c.drivers))
	for _, a := range apps {
		if i := c.owner(a.ID); i >= 0 {
			groups[i] = append(groups[i], a)
		}
	}
	out := make(map[paas.App]paas.Observation, len(apps))
	for i, group := range groups {
		if len(group) == 0 {
			continue
		}
		d := c.drivers[i]
		if b, ok := d.Client.(paas.BatchObserver); ok {
			got, err := b.ObserveAll(ctx, group)
			if err != nil {
				c.log.Debug("observing a driver's apps together failed: they are observed one by one", "driver", d.Name, "err", err)
				continue
			}
			for a, obs := range got {
				out[a] = obs
			}
			continue
		}
		for _, a := range group {
			if obs, err := d.Client.Observe(ctx, a); err == nil {
				out[a] = obs
			}
		}
	}
	return out, nil
}

// LastDeployment asks the app's driver when it reads deployments apart
// (paas.DeploymentReader); otherwise the deployment is part of its
// observation, which is read again.
func (c *Client) LastDeployment(ctx context.Context, app paas.App) (*paas.Deployment, error) {
	d, err := c.driverOf(app)
	if err != nil {
		return nil, err
	}
	if r, ok := d.(paas.DeploymentReader); ok {
		return r.LastDeployment(ctx, app)
	}
	obs, err := d.Observe(ctx, app)
	if err != nil {
		return nil, err
	}
	return obs.Deployment, nil
}

// Watch registers changed with every driver that is a paas.Watcher.
func (c *Client) Watch(ctx context.Context, changed func(appID string)) {
	for _, d := range c.drivers {
		if w, ok := d.Client.(paas.Watcher); ok {
			w.Watch(ctx, changed)
		}
	}
}

// Cost asks the app's driver when it is a paas.Pricer; otherwise the cost is
// unknown (zero).
func (c *Client) Cost(ctx context.Context, app paas.App) (paas.Cost, error) {
	d, err := c.driverOf(app)
	if err != nil {
		return paas.Cost{}, err
	}
	if p, ok := d.(paas.Pricer); ok {
		return p.Cost(ctx, app)
	}
	return paas.Cost{}, nil
}

// Measured asks the app's driver when it is a paas.Meter; otherwise nothing
// was measured (zero).
func (c *Client) Measured(app paas.App) paas.Measures {
	d, err := c.driverOf(app)
	if err != nil {
		return paas.Measures{}
	}
	if m, ok := d.(paas.Meter); ok {
		return m.Measured(app)
	}
	return paas.Measures{}
}

// AppPolicy asks the app's driver when it is a paas.PolicyHinter; otherwise
// the app gives no hint.
func (c *Client) AppPolicy(app paas.App) (paas.PolicyHint, error) {
	i := c.owner(app.ID)
	if i < 0 {
		return paas.PolicyHint{}, nil
	}
	if h, ok := c.drivers[i].Client.(paas.PolicyHinter); ok {
		return h.AppPolicy(app)
	}
	return paas.PolicyHint{}, nil
}

// WaitReady tells the app's driver when it is a paas.ReadinessWaiter; the
// others probe nothing.
func (c *Client) WaitReady(app paas.App, wait bool) {
	if d, err := c.driverOf(app); err == nil {
		if w, ok := d.(paas.ReadinessWaiter); ok {
			w.WaitReady(app, wait)
		}
	}
}

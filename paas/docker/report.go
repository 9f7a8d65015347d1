package docker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reapergw/reaper/paas"
)

// What the driver tells reaper of an app besides its observation: its cost
// (paas.Pricer), what it measured of it (paas.Meter), the policy its labels set
// (paas.PolicyHinter).

// memEvery bounds how often an app's memory is read from the engine's stats.
const memEvery = 10 * time.Second

// Cost implements paas.Pricer: the app's price_per_hour, and the memory its
// container uses, read from the engine's stats while it runs (at most every
// memEvery), else as last read while it ran (0 if never, since this driver
// started).
func (d *Driver) Cost(ctx context.Context, pa paas.App) (paas.Cost, error) {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return paas.Cost{}, err
	}
	a.mu.Lock()
	running := a.v != nil && a.v.running()
	id, mem, at := "", a.mem, a.memAt
	if running {
		id = a.v.id
	}
	a.mu.Unlock()
	if running && time.Since(at) >= memEvery {
		if n, err := a.h.eng.Memory(ctx, id); err == nil && n > 0 {
			mem = n
			a.mu.Lock()
			a.mem, a.memAt = n, time.Now()
			a.mu.Unlock()
		}
	}
	return paas.Cost{PerHour: a.spec.price, Currency: a.spec.currency, MemoryBytes: mem}, nil
}

// AppPolicy implements paas.PolicyHinter: the grace period a discovered app's
// container sets with the label reaper.grace_period, whether it asks for
// Traefik with reaper.traefik, and the apps it needs (reaper.depends_on: the
// engine starts them first and puts them to sleep after it) and its busy_url
// (reaper.busy_url, reaper.busy_max), as read when the container was
// discovered (a container recreated with another value is another
// discovery). Declared apps (paas.docker.apps) set only their busy_url and
// busy_max; apps unknown to the driver set none. It never waits on the engine.
func (d *Driver) AppPolicy(pa paas.App) (paas.PolicyHint, error) {
	d.mu.Lock()
	a, ok := d.known.Discovered(pa.ID)
	declared, _ := d.known.Declared(pa.ID)
	d.mu.Unlock()
	if !ok {
		if declared != nil && declared.spec.busyURL != "" {
			return paas.PolicyHint{BusyURL: declared.spec.busyURL, BusyMax: declared.spec.busyMax,
				BusyFrom: "config paas.docker.apps[].busy_url"}, nil
		}
		return paas.PolicyHint{}, nil
	}
	h := paas.PolicyHint{GracePeriod: a.spec.grace, Traefik: a.spec.traefik, DependsOn: slices.Clone(a.spec.dependsOn),
		BusyURL: a.spec.busyURL, BusyMax: a.spec.busyMax}
	if h.GracePeriod > 0 {
		h.From = "label " + LabelGracePeriod + " of container " + a.spec.container
	}
	if h.BusyURL != "" {
		h.BusyFrom = "label " + LabelBusyURL + " of container " + a.spec.container
	}
	var problems []string
	for _, err := range []error{a.spec.graceErr, a.spec.traefikErr} {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return h, fmt.Errorf("container %s: %s", a.spec.container, strings.Join(problems, "; "))
	}
	return h, nil
}

// Measured implements paas.Meter: how long reaper's last start of the app took,
// from the start call to its readiness (0 if reaper has not started it since the
// driver started), and the memory its container used as last read by Cost. It
// never waits on the engine.
func (d *Driver) Measured(pa paas.App) paas.Measures {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return paas.Measures{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return paas.Measures{BootTime: a.lastBoot, MemoryBytes: a.mem, MemoryAt: a.memAt}
}

package kubernetes

import (
	"context"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// record takes a new view of a workload (nil: deleted): it finds the app the
// workload is (declared, or discovered from its annotations), records the
// view, acts on what changed and tells the watchers.
func (d *Driver) record(r ref, v *view) {
	a, gone := d.claim(r, v)
	if gone != "" {
		d.notify(gone)
	}
	if a == nil {
		return
	}
	now := time.Now()
	a.mu.Lock()
	c := a.setView(v, now)
	ours, readyNow := a.ours, a.v != nil && a.v.readyNow()
	wantProbe := readyNow && a.declared != nil && a.declared.Ready != nil && !a.probed && !a.probing
	if wantProbe {
		a.probing = true
	}
	if !readyNow && a.probeStop != nil {
		a.probeStop()
		a.probeStop, a.probing = nil, false
	}
	a.mu.Unlock()
	switch {
	case c.deleted:
		d.log.Warn("kubernetes: workload deleted: its app is in error until it is back", "app", a.id, "workload", r.String())
	case c.outsideUp:
		d.log.Info("kubernetes: workload scaled up by someone else: up once a replica is ready", "app", a.id, "workload", r.String(), "replicas", v.replicas)
	case c.outsideDown:
		d.log.Info("kubernetes: workload scaled to 0 by someone else", "app", a.id, "workload", r.String())
	case c.failed:
		d.log.Warn("kubernetes: wake failed", "app", a.id, "workload", r.String(), "cause", v.failed)
		if ours {
			d.scaleBack(a)
		}
	case c.ready:
		d.log.Info("kubernetes: workload ready", "app", a.id, "workload", r.String(), "ready", v.ready)
	}
	if wantProbe {
		d.probe(a)
	}
	d.notify(a.id)
}

// claim returns the app the workload is, discovering, renaming or forgetting
// a discovered app as its annotations say, and the id of an app it no longer
// is ("" if none).
func (d *Driver) claim(r ref, v *view) (a *app, gone string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ""
	}
	a = d.byRef[r]
	if a != nil && a.declared != nil {
		return a, ""
	}
	if v == nil || !d.discover {
		return a, "" // deleted: kept, so that Observe says when
	}
	if !enabled(v.annotations) {
		if a != nil { // opted out: no longer an app
			delete(d.byRef, r)
			d.known.Forget(a.id)
			return nil, a.id
		}
		return nil, ""
	}
	id, err := appID(v.annotations, r.name)
	if err != nil {
		d.warnLocked("bad-id "+r.String(), "kubernetes: workload not discovered", "workload", r.String(), "err", err)
		return nil, ""
	}
	if a != nil && a.id == id {
		return a, ""
	}
	if a != nil { // its app_id changed
		d.known.Forget(a.id)
		gone = a.id
	}
	if _, ok := d.known.Declared(id); ok {
		d.warnLocked("dup "+r.String(), "kubernetes: workload not discovered: its app id is declared in paas.kubernetes.apps", "workload", r.String(), "app", id)
		return nil, gone
	}
	if o, _ := d.known.Discovered(id); o != nil && o.ref != r {
		d.warnLocked("dup "+r.String(), "kubernetes: workload not discovered: another workload claims its app id", "workload", r.String(), "app", id, "claimed_by", o.ref.String())
		return nil, gone
	}
	if d.known.NumDiscovered() >= maxDiscovered {
		d.warnLocked("too-many", "kubernetes: too many workloads discovered: the others are ignored", "max", maxDiscovered)
		return nil, gone
	}
	a = &app{id: id, ref: r}
	d.known.Discover(id, a) // a declared id was refused above
	d.byRef[r] = a
	d.log.Info("kubernetes: app discovered from annotations", "app", id, "workload", r.String())
	d.wg.Add(1)
	go func() { // a new app: its HPA, if any, would undo its sleep
		defer d.wg.Done()
		d.checkHPAs(d.base, []*app{a})
	}()
	return a, gone
}

// warnLocked is warnOnce with d.mu held.
func (d *Driver) warnLocked(key, msg string, args ...any) {
	if d.warned[key] {
		return
	}
	if len(d.warned) < maxDiscovered {
		d.warned[key] = true
	}
	d.log.Warn(msg, args...)
}

// probe runs the app's ready probe until it passes (the app is then up) or
// the workload is no longer ready.
func (d *Driver) probe(a *app) {
	ctx, cancel := context.WithCancel(d.base)
	a.mu.Lock()
	a.probeStop = cancel
	cfg := *a.declared.Ready
	a.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		steady := cfg.Interval.D()
		if steady <= 0 {
			steady = probe.DefaultInterval
		}
		ok := probe.Loop(ctx, time.Now(), steady, &a.gate, func(ctx context.Context) probe.Result {
			return d.prober.Probe(ctx, &cfg)
		})
		a.mu.Lock()
		a.probing = false
		if ok && a.v != nil {
			a.probed = true
			a.setView(a.v, time.Now()) // OK DEPLOY now
		}
		a.mu.Unlock()
		if ok {
			d.notify(a.id)
		}
	}()
}

// WaitReady pauses (false) or resumes (true) the app's ready probe
// (paas.ReadinessWaiter). It never blocks.
func (d *Driver) WaitReady(pa paas.App, wait bool) {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return
	}
	if wait {
		a.gate.Resume()
	} else {
		a.gate.Pause()
	}
}

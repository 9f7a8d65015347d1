package docker

import (
	"context"
	"time"

	"github.com/reapergw/reaper/paas/probe"
)

// The readiness of a started container: its ready probe, sent where target.go
// says (the container's own address rather than the port proxy's), on the
// schedule of package probe.

// target returns where the app is probed now, from its container as last read;
// false while the container does not run (it has no address to probe then).
func (a *app) target() (target, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.v == nil || !a.v.running() {
		return target{}, false
	}
	return resolveTarget(a.spec.ready, a.v.net, a.h.local), true
}

// probeText says what is probed now, for the log line of a start.
func (a *app) probeText() string {
	if t, ok := a.target(); ok {
		return t.String()
	}
	return "read once the container is seen running"
}

// readiness is one wait for an app's readiness (or one check of it).
type readiness struct {
	d        *Driver
	a        *app
	fellBack bool   // the container's own address proved unreachable: probe as configured
	probed   string // the last target probed, for the log
}

// once probes the app once. Without a probe (none configured, and no port to
// probe by default, or the default's address unreachable) it says Ready: the
// container's state decides then (awaitServing).
func (r *readiness) once(ctx context.Context) probe.Result {
	t, running := r.a.target()
	if !running {
		return probe.Unreached
	}
	if r.fellBack {
		t = fallback(r.a.spec.ready)
	}
	r.probed = t.String()
	switch {
	case !t.probes():
		return probe.Ready
	case t.http != "":
		return r.d.prober.Probe(ctx, &probe.Config{HTTP: t.http})
	}
	c := &probe.Config{TCP: t.tcp}
	if t.proto != nil {
		c = t.proto.At(t.tcp)
	}
	res, err := r.d.prober.Check(ctx, c)
	// Only a connect that nothing answered, not even with a refusal, says that
	// the address cannot be reached.
	if res != probe.Unreached || !t.own || probe.Refused(err) || ctx.Err() != nil {
		return res
	}
	if _, still := r.a.target(); !still {
		return res // it stopped meanwhile: not a matter of reachability
	}
	// Nothing answered at the container's own address, not even a refusal:
	// reaper cannot reach the container's network (reaper in a network
	// namespace of its own, an engine behind a forwarded socket, a rootless
	// engine, a macvlan network).
	r.fellBack = true
	fb := fallback(r.a.spec.ready)
	r.d.log.Warn("the container's own address cannot be reached from reaper: its readiness is probed as configured instead, where the engine's port proxy may accept before the app listens (prefer an http probe there)",
		"app", r.a.spec.id, "engine", r.a.h.name, "container", r.a.spec.container, "address", t.tcp, "err", err, "probe", fb.String())
	return r.once(ctx)
}

// awaitReady waits until the app is ready: its container runs, its probe passes
// (on the schedule of package probe, from started), and, without a configured
// ready probe, its container is healthy when its image has a HEALTHCHECK. It
// returns what was probed, and false when ctx ends first. gate pauses the probes
// (WaitReady).
func (d *Driver) awaitReady(ctx context.Context, a *app, started time.Time, gate *probe.Gate) (string, bool) {
	if !d.awaitRunning(ctx, a) {
		return "", false
	}
	r := &readiness{d: d, a: a}
	if t, _ := a.target(); t.probes() {
		steady := probe.DefaultInterval
		if a.spec.ready != nil {
			steady = a.spec.ready.Steady()
		}
		if !probe.Loop(ctx, started, steady, gate, r.once) {
			return "", false
		}
	} else {
		r.probed = t.String()
	}
	if a.spec.ready == nil && !d.awaitServing(ctx, a) {
		return "", false
	}
	return r.probed, true
}

// awaitServing waits until the container runs and, when it has a healthcheck,
// is healthy.
func (d *Driver) awaitServing(ctx context.Context, a *app) bool {
	for {
		a.mu.Lock()
		ok, ch := a.v != nil && a.v.serving(), a.changed
		a.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// readyOnce checks the app's readiness once: one probe, and, without a
// configured one, the container's state. It returns what was probed.
func (d *Driver) readyOnce(ctx context.Context, a *app) (string, bool) {
	r := &readiness{d: d, a: a}
	if r.once(ctx) != probe.Ready {
		return r.probed, false
	}
	if a.spec.ready != nil {
		return r.probed, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return r.probed, a.v != nil && a.v.serving()
}

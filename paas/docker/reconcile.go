package docker

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas"
)

// adoptProbeTimeout bounds the readiness probe run on each container found running
// when the driver starts.
const adoptProbeTimeout = 2 * time.Second

// found is a container an app maps to.
type found struct {
	h *host
	v *view
}

// reconcile maps the engines' containers onto the apps: each declared app to the
// container it names on its engine, each container that opted in to the app it
// claims (discovered apps come and go with their containers). Engines that are
// down are left as they were. adopting is set for an engine's first listing: what
// runs then is adopted, not "started from outside". d.recMu must be held.
func (d *Driver) reconcile(adopting bool) {
	decl, disc, up := d.claims()
	type change struct {
		a *app
		v *view
	}
	var changes []change
	var dropped []*app
	d.mu.Lock()
	for _, a := range d.known.EachDeclared() {
		if up[a.h] {
			changes = append(changes, change{a, decl[a]})
		}
	}
	for id, a := range d.known.EachDiscovered() {
		f, ok := disc[id]
		if !up[a.h] || (ok && f.h == a.h && f.v.name == a.spec.container && f.v.id == a.cid) {
			continue
		}
		d.known.Forget(id) // gone, or now another container: read anew
		dropped = append(dropped, a)
	}
	for id, f := range disc {
		a, ok := d.known.Discovered(id)
		if !ok {
			cfg, problem := fromLabels(f.v.name, f.v.labels)
			s := cfg.resolve(f.h.name)
			s.labels, s.problem = true, problem
			s.grace, s.graceErr = graceLabel(f.v.labels)
			s.traefik, s.traefikErr = traefikLabel(f.v.labels)
			a = newApp(s, f.h)
			a.cid = f.v.id
			d.known.Discover(id, a) // claims left the declared ids out
			d.logDiscovered(a)
		}
		changes = append(changes, change{a, f.v})
	}
	d.mu.Unlock()

	var ids []string
	var adopt []*app
	for _, a := range dropped {
		a.mu.Lock()
		a.cancelRuns()
		a.mu.Unlock()
		ids = append(ids, a.spec.id)
		d.log.Info("container no longer claims its app", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container)
	}
	for _, c := range changes {
		a := c.a
		a.mu.Lock()
		same := sameView(a.v, c.v)
		ev := a.setView(c.v, adopting)
		a.mu.Unlock()
		if same && !ev.outside && !ev.adopted {
			continue
		}
		ids = append(ids, a.spec.id)
		if ev.adopted {
			adopt = append(adopt, a)
		}
		d.logView(a, c.v, ev)
		if ev.outside {
			d.watchReady(a)
		}
	}
	if len(adopt) > 0 {
		d.adopt(adopt)
	}
	d.notify(ids...)
}

// claims reads the engines: the container of each declared app, the containers
// that claim each discovered app (the first, by engine then name, when several
// do), and which engines are up.
func (d *Driver) claims() (map[*app]*view, map[string]found, map[*host]bool) {
	decl := map[*app]*view{}
	disc := map[string]found{}
	up := map[*host]bool{}
	for _, h := range d.hosts {
		h.mu.Lock()
		views := make([]*view, 0, len(h.views))
		for _, v := range h.views {
			views = append(views, v)
		}
		up[h] = h.up
		h.mu.Unlock()
		slices.SortFunc(views, func(a, b *view) int { return cmp.Compare(a.name, b.name) })
		for _, v := range views {
			var declaredAs []string
			for _, a := range d.known.EachDeclared() {
				if a.h == h && matches(a.spec.container, v.id, v.name) {
					decl[a] = v
					declaredAs = append(declaredAs, a.spec.id)
				}
			}
			if !d.labels || !optedIn(v.labels) {
				continue
			}
			id := labelAppID(v.name, v.labels)
			if len(declaredAs) > 0 {
				// One container, one app: the declared one. Its labels
				// would make it a second app whose sleeps and wakes fight
				// the first's.
				slices.Sort(declaredAs)
				d.warnOnce("declared:"+h.name+"/"+v.name, "a container declared in paas.docker.apps also carries "+LabelEnable+"=true: it is the declared app only, its labels are ignored",
					"app", strings.Join(declaredAs, ","), "engine", h.name, "container", v.name, "label_app_id", id)
				continue
			}
			if _, ok := d.known.Declared(id); ok { // declared with another container
				d.warnOnce("conflict:"+h.name+"/"+v.name, "a container claims the id of an app declared in paas.docker.apps: the declared one wins", "app", id, "engine", h.name, "container", v.name)
				continue
			}
			if f, dup := disc[id]; dup {
				d.warnOnce("dup:"+h.name+"/"+v.name, "two containers claim the same app id: the first is used", "app", id, "used", f.h.name+"/"+f.v.name, "ignored", h.name+"/"+v.name)
				continue
			}
			disc[id] = found{h, v}
		}
	}
	return decl, disc, up
}

// sameView reports whether two reads of a container say the same.
func sameView(a, b *view) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.id == b.id && a.name == b.name && a.status == b.status && a.health == b.health &&
		a.restart == b.restart && a.exitCode == b.exitCode && a.oomKilled == b.oomKilled &&
		a.startedAt.Equal(b.startedAt) && a.errText == b.errText && maps.Equal(a.labels, b.labels) &&
		a.net.equal(b.net)
}

func (d *Driver) warnOnce(key, msg string, args ...any) {
	d.mu.Lock()
	seen := d.warned[key]
	d.warned[key] = true
	d.mu.Unlock()
	if !seen {
		d.log.Warn(msg, args...)
	}
}

func (d *Driver) logDiscovered(a *app) {
	if a.spec.problem != "" {
		d.log.Error("a container opted in with labels reaper cannot read: it is never started or stopped", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "problems", a.spec.problem)
		return
	}
	args := []any{"app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "stop_method", a.spec.method}
	if a.spec.grace > 0 {
		args = append(args, "grace_period", a.spec.grace)
	}
	if a.spec.traefik {
		args = append(args, "traefik", true)
	}
	d.log.Info("app discovered from its container's labels", args...)
	if a.spec.graceErr != nil {
		d.log.Error("a container's grace period cannot be read: the grace period of the routes that manage its app applies", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "err", a.spec.graceErr)
	}
	if a.spec.traefikErr != nil {
		d.log.Error("a container's Traefik label cannot be read: its routes are given to Traefik only if node.auth_traefik_routes names them", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "err", a.spec.traefikErr)
	}
}

// logView says what a change of the container means.
func (d *Driver) logView(a *app, v *view, ev viewEvent) {
	args := []any{"app", a.spec.id, "engine", a.h.name, "container", a.spec.container}
	switch {
	case ev.outside:
		lost, back := a.h.outage()
		d.log.Info("container runs without a start of reaper's: "+cameBackWhy(v, lost, back), append(args, "restart_policy", string(v.restart))...)
	case ev.failed != "":
		d.log.Warn("container stopped before it was ready", append(args, "why", ev.failed)...)
	case ev.stoppedOutside != "":
		d.log.Warn("container stopped without reaper: down until the next request wakes it", append(args, "why", ev.stoppedOutside)...)
	}
}

// adopt probes, once each and in parallel, the containers found running when the
// driver started, so that Observe tells ready from starting at once; those not
// ready yet are waited for in the background.
func (d *Driver) adopt(apps []*app) {
	ready := make([]bool, len(apps))
	probed := make([]string, len(apps))
	ctx, cancel := context.WithTimeout(d.base, adoptProbeTimeout)
	var wg sync.WaitGroup
	for i, a := range apps {
		wg.Go(func() { probed[i], ready[i] = d.readyOnce(ctx, a) })
	}
	wg.Wait()
	cancel()
	for i, a := range apps {
		if !ready[i] {
			d.watchReady(a)
			continue
		}
		a.mu.Lock()
		ok := a.boot == nil && a.v != nil && a.v.running()
		if ok {
			a.ready = true
			a.dep = &paas.Deployment{State: paas.DeploymentOK, Action: "DEPLOY", At: a.v.startedAt}
			a.broadcast()
		}
		a.mu.Unlock()
		d.log.Info("adopted a running container", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "ready", ok, "probe", probed[i])
	}
}

package reaper

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/reapergw/reaper/paas"
)

// The engine's side of groups and depends_on: which group an app is in, what it
// depends on, and who depends on it. Set by the binary (SetTopology) at start
// and at each reload; read by the job (jobgroup.go), the admin API and the
// metrics.

// topology is a Topology with its lookups.
type topology struct {
	groups    []Group
	byID      map[string]*Group
	groupOf   map[string]*Group
	dependsOn func(string) []string
	// former are the apps that were in a group and are in none since a
	// reload: managed on their own (formerMembersManaged).
	former map[string]bool
}

// SetTopology sets the groups and where depends_on is read. A group's members
// are managed apps even when no route names them (a worker, a scheduler): they
// get the default policy (DefaultGracePeriod, DefaultFailTimeout) unless a
// route or a TCP route manages them too. The configuration's check guarantees
// that an app is in one group at most and that no group id is an app id.
//
// An app that a reload takes out of every group stays managed, on its own
// policy: its routes' when routes manage it, else the default one (it is put
// to sleep once idle for DefaultGracePeriod), until a group names it again
// or the node restarts.
func (e *Engine) SetTopology(t Topology) {
	tp := &topology{groups: slices.Clone(t.Groups), byID: map[string]*Group{}, groupOf: map[string]*Group{}, dependsOn: t.DependsOn}
	for i := range tp.groups {
		g := &tp.groups[i]
		tp.byID[g.ID] = g
		for _, id := range g.Apps {
			tp.groupOf[id] = g
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.topo
	tp.former = formerMembers(prev, tp)
	for id := range tp.former {
		if g := prev.groupOf[id]; g != nil {
			e.log.Info("an app left its group on reload: it sleeps on its own policy now (its routes', else the default grace period)",
				"app", id, "group", g.ID)
		}
	}
	e.topo = tp
	for id := range tp.groupOf {
		e.knowLocked(id)
	}
	for id := range tp.former {
		e.knowLocked(id)
	}
}

// formerMembers are the apps that were in a group before a reload (prev's
// members, and prev's former members) and that next puts in none. Pure.
func formerMembers(prev, next *topology) map[string]bool {
	out := map[string]bool{}
	if prev != nil {
		for id := range prev.groupOf {
			out[id] = true
		}
		for id := range prev.former {
			out[id] = true
		}
	}
	for id := range next.groupOf {
		delete(out, id)
	}
	return out
}

// know makes the engine keep the record of id, an app managed without a route
// (a group member, a dependency), as it does for the apps routes manage: the
// decisions of the apps related to it read its status from there.
func (e *Engine) know(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.knowLocked(id)
}

func (e *Engine) knowLocked(id string) {
	if e.apps[id] != nil {
		return
	}
	a := &app{id: id, notify: make(chan struct{}), claims: map[*Config]claim{}}
	a.poked = make(chan struct{}, 1)
	e.apps[id] = a
	select {
	case e.refresh <- id: // learn its record soon
	default:
	}
}

func (e *Engine) topology() *topology {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.topo == nil {
		return &topology{}
	}
	return e.topo
}

// Groups lists the groups, as configured.
func (e *Engine) Groups() []Group { return slices.Clone(e.topology().groups) }

// Group returns the group whose id is id.
func (e *Engine) Group(id string) (Group, bool) {
	if g := e.topology().byID[id]; g != nil {
		return *g, true
	}
	return Group{}, false
}

// GroupOf returns the group the app is in.
func (e *Engine) GroupOf(appID string) (Group, bool) {
	if g := e.topology().groupOf[appID]; g != nil {
		return *g, true
	}
	return Group{}, false
}

// DependsOn returns the app's depends_on (nil: none): the configuration's
// (Topology.DependsOn) and what the app says of itself through its driver
// (paas.PolicyHint.DependsOn: the docker driver's reaper.depends_on label),
// read on each call from the driver's memory, so a container discovered or
// recreated with other labels counts at once. An app on a depends_on cycle
// (as the last look at the managed apps found it) depends on nothing.
func (e *Engine) DependsOn(appID string) []string {
	if _, refused := e.deps.Load().refused(appID); refused {
		return nil
	}
	return e.dependsOn(e.topology(), paas.App{ID: appID, Owner: e.ownerOf(appID)}, e.opts.Policies)
}

// dependsOn is DependsOn with the topology t and the hints of hints (nil:
// none); it takes no lock of the engine.
func (e *Engine) dependsOn(t *topology, pa paas.App, hints paas.PolicyHinter) []string {
	appID := pa.ID
	var out []string
	if t != nil && t.dependsOn != nil {
		out = t.dependsOn(appID)
	}
	if hints == nil {
		return out
	}
	h, _ := hints.AppPolicy(pa)
	for _, d := range h.DependsOn {
		if d != appID && !slices.Contains(out, d) {
			out = append(slices.Clip(out), d)
		}
	}
	return out
}

// hasDependencies reports whether depends_on may say anything: set in the
// configuration, or a driver that may report it.
func (e *Engine) hasDependencies() bool {
	return e.topology().dependsOn != nil || e.opts.Policies != nil
}

// StartOrder returns the group's members in their start order (dependencies
// first); they stop in the reverse order.
func (e *Engine) StartOrder(g Group) []string { return StartOrder(g.Apps, e.DependsOn) }

// wakeSet is every app a wake of appID wakes: its group's members and, for
// each, its dependencies, transitively; appID included, sorted.
func (e *Engine) wakeSet(appID string) []string {
	t := e.topology()
	seen := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		if seen[id] || len(seen) >= maxWakeSet {
			return
		}
		seen[id] = true
		if g := t.groupOf[id]; g != nil {
			for _, m := range g.Apps {
				visit(m)
			}
		}
		for _, d := range e.DependsOn(id) {
			visit(d)
		}
	}
	visit(appID)
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// maxWakeSet bounds what one wake wakes (a bad depends_on chain among
// discovered containers must not make a wake walk without end).
const maxWakeSet = 256

// groupMembersManaged adds to out the group members no route manages: a
// worker woken by its group has no route of its own. Such a member takes the
// longest grace period of its group's members that routes manage (the group
// sleeps on that clock), DefaultGracePeriod when none is; and
// DefaultFailTimeout. Every member gets the group's keep-up windows. It adds
// the former members (apps a reload took out of every group) that no route
// manages too, on the default policy: nothing else would put them to sleep.
func (e *Engine) groupMembersManaged(out []ManagedApp) []ManagedApp {
	t := e.topology()
	if len(t.groupOf) == 0 && len(t.former) == 0 {
		return out
	}
	have := map[string]bool{}
	grace := map[string]time.Duration{} // by group
	for i := range out {
		have[out[i].App.ID] = true
		if g := t.groupOf[out[i].App.ID]; g != nil {
			out[i].Group = g.ID
			grace[g.ID] = max(grace[g.ID], out[i].Policy.GracePeriod)
		}
	}
	for id, g := range t.groupOf {
		if have[id] {
			continue
		}
		p := Policy{GracePeriod: grace[g.ID], FailTimeout: DefaultFailTimeout}
		if p.GracePeriod <= 0 {
			p.GracePeriod = DefaultGracePeriod
		}
		out = append(out, ManagedApp{App: paas.App{ID: id, Owner: e.ownerOf(id)}, Name: id, Routes: []string{}, Policy: p, Group: g.ID})
	}
	owner, _ := e.opts.Policies.(paas.Owner)
	for _, id := range slices.Sorted(maps.Keys(t.former)) { // sorted: Managed's order is stable
		if have[id] || t.groupOf[id] != nil {
			continue
		}
		if owner != nil && !owner.Owns(id) {
			continue // its driver no longer has it (a discovered container relabelled): nothing of reaper's any more
		}
		p := Policy{GracePeriod: DefaultGracePeriod, FailTimeout: DefaultFailTimeout}
		out = append(out, ManagedApp{App: paas.App{ID: id, Owner: e.ownerOf(id)}, Name: id, Routes: []string{}, Policy: p})
	}
	for i := range out { // the group's keep-up windows are every member's
		if g := t.groupOf[out[i].App.ID]; g != nil && len(g.MustBeUp) > 0 {
			out[i].Policy.MustBeUp = append(append([]Range(nil), out[i].Policy.MustBeUp...), g.MustBeUp...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].App.ID < out[j].App.ID })
	return out
}

func (e *Engine) ownerOf(id string) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if a := e.apps[id]; a != nil {
		return a.owner
	}
	return ""
}

// dependenciesManaged adds to out the apps that managed apps depend on
// (transitively) and that nothing else manages: a database container that a
// web app's reaper.depends_on names has no route of its own, yet the engine
// must start it first and put it to sleep after. Such a dependency takes the
// longest grace period of the apps that need it (it sleeps once they do; it is
// kept up while one of them is awake, NeededBy) and DefaultFailTimeout. Bounded
// by maxWakeSet new apps.
func (e *Engine) dependenciesManaged(out []ManagedApp, dependsOn func(paas.App) []string) []ManagedApp {
	if !e.hasDependencies() {
		return out
	}
	index := make(map[string]int, len(out))
	for i := range out {
		index[out[i].App.ID] = i
	}
	added := map[string]bool{}
	for i := 0; i < len(out); i++ { // out grows: the dependencies' own come next
		for _, d := range dependsOn(out[i].App) {
			j, ok := index[d]
			switch {
			case added[d]: // the longest grace of the apps that need it
				out[j].Policy.GracePeriod = max(out[j].Policy.GracePeriod, out[i].Policy.GracePeriod)
			case ok || len(added) >= maxWakeSet:
			default:
				index[d], added[d] = len(out), true
				e.know(d)
				p := Policy{GracePeriod: cmp.Or(out[i].Policy.GracePeriod, DefaultGracePeriod), FailTimeout: DefaultFailTimeout}
				out = append(out, ManagedApp{App: paas.App{ID: d, Owner: e.ownerOf(d)}, Name: d, Routes: []string{}, Policy: p})
			}
		}
	}
	if len(added) > 0 {
		sort.Slice(out, func(i, j int) bool { return out[i].App.ID < out[j].App.ID })
	}
	return out
}

// dependenciesLocked are the apps that the apps routes or groups manage depend
// on, transitively: sweep keeps them (dependenciesManaged manages them).
// Bounded by maxWakeSet. e.mu must be held.
func (e *Engine) dependenciesLocked() map[string]bool {
	if e.topo == nil && e.opts.Policies == nil {
		return nil
	}
	out := map[string]bool{}
	var todo []paas.App
	for id, a := range e.apps {
		if len(a.claims) > 0 || e.topo != nil && (e.topo.groupOf[id] != nil || e.topo.former[id]) {
			todo = append(todo, paas.App{ID: id, Owner: a.owner})
		}
	}
	for len(todo) > 0 && len(out) < maxWakeSet {
		pa := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, d := range e.dependsOn(e.topo, pa, e.opts.Policies) {
			if !out[d] {
				out[d] = true
				owner := ""
				if a := e.apps[d]; a != nil {
					owner = a.owner
				}
				todo = append(todo, paas.App{ID: d, Owner: owner})
			}
		}
	}
	return out
}

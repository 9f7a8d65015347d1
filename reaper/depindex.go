package reaper

import (
	"sort"
	"strings"

	"github.com/reapergw/reaper/paas"
)

// depIndex is the managed apps' depends_on as one look at them found it
// (Engine.managedAndDeps): each app's dependencies and, the other way, the
// apps that depend on each. It is built once per look, so that a pass asks
// the driver for each app's hint once (a step asks for its app's dependents:
// scanning every app's depends_on then was O(apps²) hints a pass). Read only
// once built.
type depIndex struct {
	of         map[string][]string // an app's depends_on; none for an app on a cycle
	dependents map[string][]string // the apps whose depends_on names an app
	// cycles are the depends_on cycles found (the apps' own hints may make
	// one that the configuration's check cannot see), each spelled
	// "a → b → a", sorted; onCycle gives the cycle an app is on.
	cycles  []string
	onCycle map[string]string
}

// newDepIndex indexes the depends_on of the managed apps (dependsOn gives an
// app's, asked once each). The apps on a cycle lose every depends_on of
// theirs: they behave as if they had none (DependencyCycles).
func newDepIndex(managed []ManagedApp, dependsOn func(paas.App) []string) *depIndex {
	raw := make(map[string][]string, len(managed))
	for _, m := range managed {
		raw[m.App.ID] = dependsOn(m.App)
	}
	x := &depIndex{dependents: map[string][]string{}}
	x.of, x.cycles, x.onCycle = DependencyCycles(raw)
	for _, m := range managed {
		if _, ok := x.of[m.App.ID]; !ok {
			x.of[m.App.ID] = nil // known, with none
		}
	}
	for _, m := range managed { // in managed's order: a stable order of dependents
		for _, d := range x.of[m.App.ID] {
			x.dependents[d] = append(x.dependents[d], m.App.ID)
		}
	}
	return x
}

// dependsOnOf returns the app's indexed depends_on; ok false when the index
// does not know the app (no managed app).
func (x *depIndex) dependsOnOf(id string) (_ []string, ok bool) {
	if x == nil {
		return nil, false
	}
	d, ok := x.of[id] // nil for an app on a cycle (newDepIndex)
	return d, ok
}

// DependencyCycles refuses the depends_on cycles of deps (each app's
// depends_on): every app on a cycle loses its depends_on (all of it: the app
// behaves as if it had none), and the rest is kept. It returns what is kept,
// the cycles found, each spelled "a → b → a" and sorted, and the cycle each
// refused app is on. deps is not changed. Pure.
func DependencyCycles(deps map[string][]string) (kept map[string][]string, cycles []string, onCycle map[string]string) {
	kept = make(map[string][]string, len(deps))
	for id, d := range deps {
		if len(d) > 0 {
			kept[id] = d
		}
	}
	onCycle = map[string]string{}
	// Each round drops the depends_on of at least one app: at most len(deps) rounds.
	for c := DependencyCycle(kept); c != nil; c = DependencyCycle(kept) {
		text := strings.Join(c, " → ")
		cycles = append(cycles, text)
		for _, id := range c[:len(c)-1] {
			delete(kept, id)
			if _, ok := onCycle[id]; !ok {
				onCycle[id] = text
			}
		}
	}
	sort.Strings(cycles)
	return kept, cycles, onCycle
}

// refused reports whether the app's depends_on is refused, being on a cycle,
// and the cycle.
func (x *depIndex) refused(id string) (cycle string, ok bool) {
	if x == nil {
		return "", false
	}
	cycle, ok = x.onCycle[id]
	return cycle, ok
}

// noteDeps keeps x as the engine's view of depends_on (DependsOn refuses the
// depends_on of the apps on its cycles), and logs its cycles when they are
// not those last logged: once per change, not once per look.
func (e *Engine) noteDeps(x *depIndex) {
	e.deps.Store(x)
	said := strings.Join(x.cycles, "; ")
	e.cyclesMu.Lock()
	changed := said != e.cyclesSaid
	e.cyclesSaid = said
	e.cyclesMu.Unlock()
	switch {
	case !changed:
	case said != "":
		e.log.Warn("depends_on makes a cycle: the depends_on of the apps on it is ignored until it is gone",
			"cycles", said)
	default:
		e.log.Info("depends_on makes no cycle any more: every app's depends_on is honoured")
	}
}

// hintMemo returns the driver's hints (EngineOptions.Policies), each app's
// asked once for the returned value's lifetime (one look at the managed
// apps); nil when there is no driver's hint.
func (e *Engine) hintMemo() paas.PolicyHinter {
	if e.opts.Policies == nil {
		return nil
	}
	return &hintMemo{from: e.opts.Policies, seen: map[paas.App]hintAnswer{}}
}

// hintMemo is a paas.PolicyHinter that asks another once per app. Not safe
// for concurrent use.
type hintMemo struct {
	from paas.PolicyHinter
	seen map[paas.App]hintAnswer
}

type hintAnswer struct {
	h   paas.PolicyHint
	err error
}

var _ paas.PolicyHinter = (*hintMemo)(nil)

func (m *hintMemo) AppPolicy(pa paas.App) (paas.PolicyHint, error) {
	a, ok := m.seen[pa]
	if !ok {
		a.h, a.err = m.from.AppPolicy(pa)
		m.seen[pa] = a
	}
	return a.h, a.err
}

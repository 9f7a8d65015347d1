package reaper

import (
	"context"
	"time"

	"github.com/reapergw/reaper/paas"
)

// The job's side of groups and depends_on (the decisions are group.go's): a
// wake ask for one app is a wake ask for its whole wake set (its group's
// members and their dependencies), each app's step is told what its group and
// dependencies say (GroupInput), and a change of status makes the job look at
// the apps it concerns at once.

// expandAsks adds, for every asked app, an ask for each app of its wake set
// that has none and is not up or waking, stored (so that it outlives this pass and this leader) with
// the first ask's time. It returns asks with them.
func (j *Job) expandAsks(ctx context.Context, asks map[string]time.Time) map[string]time.Time {
	e := j.opts.Engine
	if len(asks) == 0 || len(e.topology().groupOf) == 0 && !e.hasDependencies() {
		return asks
	}
	var added map[string]time.Time
	for id, at := range asks {
		for _, m := range e.wakeSet(id) {
			if _, ok := asks[m]; ok {
				continue
			}
			// An app up or waking needs no ask (one would be cleared at its
			// next look, and stored again at the next pass).
			if r, ok := e.Record(m); ok && (r.Status == StatusUp || r.Status == StatusWaitingForUp) {
				continue
			}
			if prev, ok := added[m]; ok && !at.Before(prev) {
				continue
			}
			if added == nil {
				added = map[string]time.Time{}
			}
			added[m] = at
		}
	}
	if len(added) == 0 {
		return asks
	}
	out := make(map[string]time.Time, len(asks)+len(added))
	for id, at := range asks {
		out[id] = at
	}
	for id, at := range added {
		if err := j.opts.Store.AskWake(ctx, id, at, e.asks.ttl); err != nil {
			j.apiErr.log(j.log, "storing a group's wake ask failed", err)
		}
		out[id] = at
	}
	return out
}

// withRelated adds to ids the apps each one concerns (relatedApps): a look at
// one member is a look at its group.
func (j *Job) withRelated(ids map[string]bool) map[string]bool {
	out := make(map[string]bool, len(ids))
	for id := range ids {
		out[id] = true
		for _, r := range j.relatedApps(id) {
			out[r] = true
		}
	}
	return out
}

// relatedApps are the apps whose decision a change of appID may change: its
// group's members, its dependencies and the apps that depend on it.
func (j *Job) relatedApps(appID string) []string {
	e := j.opts.Engine
	var out []string
	if g, ok := e.GroupOf(appID); ok {
		out = append(out, g.Apps...)
	}
	deps := j.depIndex()
	out = append(out, j.dependsOn(deps, appID)...)
	return append(out, deps.dependents[appID]...)
}

// depIndex is the managed apps' depends_on as the last targets read them
// (an empty index before the first).
func (j *Job) depIndex() *depIndex {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.deps == nil {
		return &depIndex{}
	}
	return j.deps
}

// dependsOn is the app's depends_on: deps's, read by the targets, for an app
// it knows; the engine's for another (an app no route manages any more).
func (j *Job) dependsOn(deps *depIndex, appID string) []string {
	if d, ok := deps.dependsOnOf(appID); ok {
		return d
	}
	return j.opts.Engine.DependsOn(appID)
}

// lookAtRelated asks the job to look at the apps a change of rec's status
// concerns: the next member to stop once one is down, the dependents to start
// once it is up, the rest of its group when it wakes. A change to
// WaitingForShutdown concerns none of them (a stopping app counts as awake for
// its group and its dependents), and looking at them would be looking at its
// group again, this app included: a stop refused at once would be sent again
// without end.
func (j *Job) lookAtRelated(ctx context.Context, prev, next Record) {
	if prev.Status == next.Status || next.Status == StatusWaitingForShutdown {
		return
	}
	for _, id := range j.relatedApps(next.AppID) {
		if id != next.AppID {
			_ = j.Ask(ctx, id)
		}
	}
}

// groupInput is what the app's group and dependencies say to its decision at
// now: rec is its record as the step read it; the other apps' records are this
// node's view (the leader's own writes, and what the store told it).
func (j *Job) groupInput(t target, rec Record, pd *passData, now time.Time) GroupInput {
	e := j.opts.Engine
	id := t.app.ID
	status := func(a string) (Status, bool) {
		if a == id {
			return rec.Status, true
		}
		r, ok := e.Record(a)
		return r.Status, ok
	}
	deps := j.depIndex()
	dependsOn := func(a string) []string { return j.dependsOn(deps, a) }
	var gi GroupInput
	if g, ok := e.GroupOf(id); ok {
		members := make(map[string]Member, len(g.Apps))
		j.mu.Lock()
		policies := j.policies
		j.mu.Unlock()
		for _, m := range g.Apps {
			r, ok := rec, true
			if m != id {
				r, ok = e.Record(m)
			}
			if !ok {
				continue
			}
			p, ok := policies[m]
			if !ok {
				p = Policy{GracePeriod: DefaultGracePeriod, FailTimeout: DefaultFailTimeout}
			}
			members[m] = Member{Rec: r, In: j.input(m, paas.Observation{}, pd), Policy: p}
		}
		gi = DecideGroup(StartOrder(g.Apps, dependsOn), members, now).ForMember(rec)
	}
	gi.StartAfter = StartAfter(dependsOn(id), status)
	neededBy := NeededBy(deps.dependents[id], status)
	if gi.StopAfter == "" {
		gi.StopAfter = neededBy
	}
	gi.Needed = neededBy != "" && rec.Status == StatusDown && !sleptByOperator(rec)
	return gi
}

package reaper

import (
	"cmp"
	"slices"
	"time"
)

// Groups and depends_on: apps that wake and sleep together, and apps started
// after the apps they need. What to do is decided here, purely (DecideGroup,
// StartOrder, take now); the job's side is jobgroup.go.

// Group is a top-level groups[] entry: apps that wake together and sleep
// together. An app is in one group at most.
type Group struct {
	ID string
	// Apps are the members, as configured.
	Apps []string
	// MustBeUp are the group's own keep-up windows: every member has them
	// in its policy, besides its routes' (topology.go).
	MustBeUp []Range
}

// Topology is what the engine knows of groups and dependencies: the groups, and
// each app's depends_on (an app absent from it depends on nothing).
type Topology struct {
	Groups    []Group
	DependsOn func(appID string) []string
}

// GroupInput is what an app's group and its dependencies say to Decide; zero
// for an app in no group that depends on nothing and nothing depends on.
type GroupInput struct {
	// Wake: the group is in use (a member wakes, or is up and not idle by the
	// group's clock): this sleeping member wakes too.
	Wake bool
	// Keep: the group is not idle: the idle clock does not put this member to
	// sleep (an operator's "sleep now" still does).
	Keep bool
	// StopAfter names an app that must be asleep before this one stops: the
	// member after it in the group's order, or an app awake that depends on it.
	// Neither the idle clock nor an operator's unforced "sleep now" stops it meanwhile.
	StopAfter string
	// StartAfter names a dependency (depends_on) not up yet: a wake of this app
	// waits for it; the app is started once every dependency is up.
	StartAfter string
	// Needed: an app that depends on this sleeping one is awake (up, waking or
	// stopping): this one wakes, as a dependency crashed or stopped from
	// outside must come back (unless an operator put it to sleep by its id).
	Needed bool
}

// CauseGroupAwake is the cause of a member woken because its group is in use;
// CauseNeeded of an app woken because an app that depends on it is awake.
const (
	CauseGroupAwake = "woken: its group is awake"
	CauseNeeded     = "woken: an app that depends on it is awake"
)

// StartOrder is the order a group's members start in: each after the members
// it depends on (depends_on, among the members), otherwise in the configured
// order. The members stop in the reverse order. A cycle (which the
// configuration's check refuses) falls back to the configured order for the
// members on it. Pure.
func StartOrder(apps []string, dependsOn func(string) []string) []string {
	out := make([]string, 0, len(apps))
	placed := map[string]bool{}
	visiting := map[string]bool{}
	var place func(id string)
	place = func(id string) {
		if placed[id] || visiting[id] {
			return
		}
		visiting[id] = true
		if dependsOn != nil {
			for _, d := range dependsOn(id) {
				if slices.Contains(apps, d) {
					place(d)
				}
			}
		}
		visiting[id] = false
		if !placed[id] {
			placed[id] = true
			out = append(out, id)
		}
	}
	for _, id := range apps {
		place(id)
	}
	return out
}

// Member is what the group's decision needs of one member: its record, what
// the job knows of it (its traffic), and its policy.
type Member struct {
	Rec    Record
	In     Input
	Policy Policy
}

// GroupState is a group's state at one moment, as DecideGroup sees it.
type GroupState struct {
	// Order is the start order (StartOrder); members stop in its reverse.
	Order []string
	// Grace is the group's grace period: the longest of its members'.
	Grace time.Duration
	// InUse: a member is waking, or up and not idle by the group's clock (busy,
	// in a keep-up window, held, or used less than Grace ago). Its sleeping
	// members wake, and none is put to sleep by the idle clock.
	InUse bool
	// SleepAt is when the group goes to sleep if nothing happens: the latest
	// idle clock of its members plus Grace; zero while a member is busy, waking
	// or inside a keep-up window, or when no member is up.
	SleepAt time.Time
	// NextToSleep is the member that stops next: the last in Order still up or
	// stopping. "" when no member is.
	NextToSleep string
	// Why names the member that keeps the group in use ("" when it is not).
	Why string
}

// DecideGroup says whether the group is in use, when it sleeps, and which
// member stops next, from its members at now. A member an operator asked to
// sleep counts as idle; one in Error, not yet observed or asleep counts for
// nothing. Pure.
func DecideGroup(order []string, members map[string]Member, now time.Time) GroupState {
	st := GroupState{Order: order}
	for _, id := range order {
		st.Grace = max(st.Grace, members[id].Policy.GracePeriod)
	}
	clockOnly := true
	for _, id := range order {
		m, ok := members[id]
		if !ok {
			continue
		}
		switch m.Rec.Status {
		case StatusWaitingForUp:
			st.InUse, clockOnly = true, false
			st.Why = cmp.Or(st.Why, id)
		case StatusUp, StatusWaitingForShutdown:
			st.NextToSleep = id
			if m.Rec.Status != StatusUp || m.Rec.SleepAsk.Pending(m.Rec) {
				continue
			}
			if m.In.Busy || m.Policy.KeepUp(now) {
				st.InUse, clockOnly = true, false
				st.Why = cmp.Or(st.Why, id)
				continue
			}
			at := idleSince(m.Rec, m.In).Add(st.Grace)
			if now.Before(at) || m.Rec.Hold.Active(now) {
				st.InUse = true
				st.Why = cmp.Or(st.Why, id)
			}
			st.SleepAt = latest(st.SleepAt, at)
		}
	}
	if !clockOnly {
		st.SleepAt = time.Time{}
	}
	return st
}

// ForMember is what the group's state says to one member (its GroupInput,
// without StartAfter, which depends_on gives): wake it when the group is in use
// and it sleeps (unless an operator put it to sleep by its own id since it was
// last up); keep it from its idle clock while the group is in use; once the
// group is idle, let it stop only in its turn.
func (st GroupState) ForMember(rec Record) GroupInput {
	var gi GroupInput
	id := rec.AppID
	switch rec.Status {
	case StatusDown:
		gi.Wake = st.InUse && !sleptByOperator(rec)
	case StatusUp, StatusWaitingForShutdown:
		// In use, the group keeps the member from its idle clock (an
		// operator's sleep of the member alone still goes); idle, the group
		// goes to sleep one member at a time, in the reverse order.
		gi.Keep = st.InUse
		if !st.InUse && st.NextToSleep != "" && st.NextToSleep != id {
			gi.StopAfter = st.NextToSleep
		}
	}
	return gi
}

// sleptByOperator reports whether an operator put rec to sleep by its own id
// since it was last up: neither its group nor its dependents wake it then.
func sleptByOperator(rec Record) bool {
	return rec.SleepAsk != nil && !rec.SleepAsk.At.Before(rec.LastUpAt)
}

// NeededBy returns an app awake (up, waking or stopping) among dependents, or
// "": an app must not sleep while an app that depends on it is awake. status
// gives each app's status (ok false: unknown, counts for nothing). An app in
// Error counts for nothing: reaper keeps its hands off it. Pure.
func NeededBy(dependents []string, status func(string) (Status, bool)) string {
	for _, d := range dependents {
		s, ok := status(d)
		if ok && (s == StatusUp || s == StatusWaitingForUp || s == StatusWaitingForShutdown) {
			return d
		}
	}
	return ""
}

// StartAfter returns the first of deps that is not up, or "": an app starts
// once every dependency is up. A dependency in Error, or unknown, does not hold
// it back (nothing but an operator would bring it up). Pure.
func StartAfter(deps []string, status func(string) (Status, bool)) string {
	for _, d := range deps {
		s, ok := status(d)
		if ok && s != StatusUp && s != StatusError {
			return d
		}
	}
	return ""
}

// DependencyCycle returns a cycle among deps (each app's depends_on), or nil.
// Pure.
func DependencyCycle(deps map[string][]string) []string {
	ids := make([]string, 0, len(deps))
	for id := range deps {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the same cycle reported every time
	mark := map[string]int{}
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch mark[id] {
		case 1:
			i := slices.Index(path, id)
			return append(slices.Clone(path[i:]), id)
		case 2:
			return nil
		}
		mark[id] = 1
		path = append(path, id)
		for _, d := range deps[id] {
			if c := visit(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		mark[id] = 2
		return nil
	}
	for _, id := range ids {
		if c := visit(id); c != nil {
			return c
		}
	}
	return nil
}

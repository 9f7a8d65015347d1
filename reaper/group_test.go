package reaper

import (
	"slices"
	"testing"
	"time"
)

func TestStartOrder(t *testing.T) {
	deps := map[string][]string{"web": {"api"}, "api": {"db"}, "worker": {"api", "outside"}, "a": {"b"}, "b": {"a"}}
	dependsOn := func(id string) []string { return deps[id] }
	for _, tc := range []struct {
		name string
		apps []string
		deps func(string) []string
		want []string
	}{
		{"no depends_on: the configured order", []string{"web", "api", "worker"}, nil, []string{"web", "api", "worker"}},
		{"dependencies first", []string{"web", "worker", "api", "db"}, dependsOn, []string{"db", "api", "web", "worker"}},
		{"a dependency outside the group is not placed", []string{"worker", "scheduler"}, dependsOn, []string{"worker", "scheduler"}},
		{"a cycle falls back to the configured order", []string{"a", "b"}, dependsOn, []string{"b", "a"}},
		{"empty", nil, dependsOn, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StartOrder(tc.apps, tc.deps); !slices.Equal(got, tc.want) {
				t.Fatalf("StartOrder(%v) = %v, want %v", tc.apps, got, tc.want)
			}
		})
	}
}

func TestDecideGroup(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	order := []string{"api", "web", "worker"}
	up := func(id string, lastAccess time.Duration, grace time.Duration) Member {
		return Member{Rec: Record{AppID: id, Status: StatusUp, LastUpAt: now.Add(-2 * time.Hour)},
			In: Input{LastAccess: now.Add(-lastAccess)}, Policy: Policy{GracePeriod: grace}}
	}
	down := func(id string) Member {
		return Member{Rec: Record{AppID: id, Status: StatusDown}, Policy: Policy{GracePeriod: time.Minute}}
	}
	with := func(m Member, f func(*Member)) Member { f(&m); return m }
	for _, tc := range []struct {
		name     string
		members  map[string]Member
		inUse    bool
		sleepAt  time.Time
		next     string
		why      string
		grace    time.Duration
		wantKeep map[string]bool
	}{
		{
			name: "every member idle by the longest grace: not in use, the last stops first",
			members: map[string]Member{"api": up("api", 40*time.Minute, 15*time.Minute),
				"web": up("web", 31*time.Minute, 30*time.Minute), "worker": up("worker", time.Hour, 5*time.Minute)},
			sleepAt: now.Add(-time.Minute), next: "worker", grace: 30 * time.Minute,
		},
		{
			name: "traffic on one member keeps the group: its own short grace does not count",
			members: map[string]Member{"api": up("api", 40*time.Minute, 15*time.Minute),
				"web": up("web", 20*time.Minute, 5*time.Minute), "worker": up("worker", time.Hour, 30*time.Minute)},
			inUse: true, sleepAt: now.Add(10 * time.Minute), next: "worker", why: "web", grace: 30 * time.Minute,
		},
		{
			name: "a busy member: in use, no sleep time",
			members: map[string]Member{"api": with(up("api", time.Hour, time.Minute), func(m *Member) { m.In.Busy = true }),
				"web": up("web", time.Hour, time.Minute), "worker": up("worker", time.Hour, time.Minute)},
			inUse: true, next: "worker", why: "api", grace: time.Minute,
		},
		{
			name: "a member waking: in use",
			members: map[string]Member{"api": up("api", time.Hour, time.Minute),
				"web": with(down("web"), func(m *Member) { m.Rec.Status = StatusWaitingForUp }), "worker": down("worker")},
			inUse: true, next: "api", why: "web", grace: time.Minute,
		},
		{
			name: "the last members asleep: the next up in reverse order stops",
			members: map[string]Member{"api": up("api", time.Hour, time.Minute),
				"web": up("web", time.Hour, time.Minute), "worker": down("worker")},
			sleepAt: now.Add(-59 * time.Minute), next: "web", grace: time.Minute,
		},
		{
			name: "a member stopping is the next: the others wait for it",
			members: map[string]Member{"api": up("api", time.Hour, time.Minute),
				"web": with(up("web", time.Hour, time.Minute), func(m *Member) { m.Rec.Status = StatusWaitingForShutdown }), "worker": down("worker")},
			sleepAt: now.Add(-59 * time.Minute), next: "web", grace: time.Minute,
		},
		{
			name: "a held member keeps the group until its hold's end plus the grace",
			members: map[string]Member{"api": with(up("api", time.Hour, time.Minute), func(m *Member) {
				m.Rec.Hold = &KeepWarm{Since: now.Add(-time.Hour), Until: now.Add(time.Hour)}
			}), "web": up("web", time.Hour, time.Minute), "worker": up("worker", time.Hour, time.Minute)},
			inUse: true, sleepAt: now.Add(time.Hour + time.Minute), next: "worker", why: "api", grace: time.Minute,
		},
		{
			name: "a member an operator asked to sleep counts as idle",
			members: map[string]Member{"api": up("api", time.Hour, time.Minute),
				"web": with(up("web", 0, time.Minute), func(m *Member) { m.Rec.SleepAsk = &SleepAsk{At: now} }), "worker": up("worker", time.Hour, time.Minute)},
			sleepAt: now.Add(-59 * time.Minute), next: "worker", grace: time.Minute,
		},
		{
			name: "a member in Error or never seen counts for nothing",
			members: map[string]Member{"api": with(down("api"), func(m *Member) { m.Rec.Status = StatusError }),
				"web": up("web", time.Hour, time.Minute)},
			sleepAt: now.Add(-59 * time.Minute), next: "web", grace: time.Minute,
		},
		{
			name:    "every member asleep: nothing to stop",
			members: map[string]Member{"api": down("api"), "web": down("web"), "worker": down("worker")},
			grace:   time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := DecideGroup(order, tc.members, now)
			if st.InUse != tc.inUse || !st.SleepAt.Equal(tc.sleepAt) || st.NextToSleep != tc.next || st.Why != tc.why || st.Grace != tc.grace {
				t.Fatalf("DecideGroup = in use %v, sleep at %v, next %q, why %q, grace %v; want %v, %v, %q, %q, %v",
					st.InUse, st.SleepAt, st.NextToSleep, st.Why, st.Grace, tc.inUse, tc.sleepAt, tc.next, tc.why, tc.grace)
			}
		})
	}
}

func TestGroupState_ForMember(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	inUse := GroupState{InUse: true, NextToSleep: "worker"}
	idle := GroupState{NextToSleep: "worker"}
	for _, tc := range []struct {
		name string
		st   GroupState
		rec  Record
		want GroupInput
	}{
		{"a sleeping member of a group in use wakes", inUse, Record{AppID: "api", Status: StatusDown}, GroupInput{Wake: true}},
		{"one an operator put to sleep by its id does not", inUse,
			Record{AppID: "api", Status: StatusDown, LastUpAt: now.Add(-time.Hour), SleepAsk: &SleepAsk{At: now.Add(-time.Minute)}}, GroupInput{}},
		{"an old sleep ask (before its last wake) does not hold it", inUse,
			Record{AppID: "api", Status: StatusDown, LastUpAt: now.Add(-time.Minute), SleepAsk: &SleepAsk{At: now.Add(-time.Hour)}}, GroupInput{Wake: true}},
		{"a sleeping member of an idle group sleeps on", idle, Record{AppID: "api", Status: StatusDown}, GroupInput{}},
		{"an awake member of a group in use is kept (an operator may still put it to sleep alone)", inUse, Record{AppID: "api", Status: StatusUp},
			GroupInput{Keep: true}},
		{"the next to sleep of an idle group may stop", idle, Record{AppID: "worker", Status: StatusUp}, GroupInput{}},
		{"the others of an idle group wait for it", idle, Record{AppID: "web", Status: StatusUp}, GroupInput{StopAfter: "worker"}},
		{"a member in Error is left alone", inUse, Record{AppID: "web", Status: StatusError}, GroupInput{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.st.ForMember(tc.rec); got != tc.want {
				t.Fatalf("ForMember = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestStartAfterAndNeededBy(t *testing.T) {
	statuses := map[string]Status{"db": StatusUp, "cache": StatusWaitingForUp, "broken": StatusError, "off": StatusDown}
	status := func(id string) (Status, bool) { s, ok := statuses[id]; return s, ok }
	for _, tc := range []struct {
		deps []string
		want string
	}{
		{nil, ""}, {[]string{"db"}, ""}, {[]string{"db", "cache"}, "cache"}, {[]string{"broken", "unknown"}, ""}, {[]string{"off", "cache"}, "off"},
	} {
		if got := StartAfter(tc.deps, status); got != tc.want {
			t.Errorf("StartAfter(%v) = %q, want %q", tc.deps, got, tc.want)
		}
	}
	for _, tc := range []struct {
		dependents []string
		want       string
	}{
		{nil, ""}, {[]string{"off", "broken", "unknown"}, ""}, {[]string{"off", "cache"}, "cache"}, {[]string{"db"}, "db"},
	} {
		if got := NeededBy(tc.dependents, status); got != tc.want {
			t.Errorf("NeededBy(%v) = %q, want %q", tc.dependents, got, tc.want)
		}
	}
}

// Decide follows what the group says: a member kept by its group or waiting
// its turn is not stopped by its idle clock, a member of a group in use wakes,
// a wake waits for the dependencies.
func TestDecide_Group(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{GracePeriod: time.Minute, FailTimeout: time.Minute}
	idleUp := Record{AppID: "web", Status: StatusUp, LastUpAt: now.Add(-time.Hour)}
	upObs := Input{LastAccess: now.Add(-time.Hour)}
	upObs.Observation.State = "SHOULD_BE_UP"
	downObs := Input{}
	downObs.Observation.State = "SHOULD_BE_DOWN"
	down := Record{AppID: "web", Status: StatusDown}
	for _, tc := range []struct {
		name   string
		rec    Record
		in     Input
		group  GroupInput
		status Status
		act    Action
	}{
		{"alone and idle: stops", idleUp, upObs, GroupInput{}, StatusWaitingForShutdown, ActionStop},
		{"kept by its group", idleUp, upObs, GroupInput{Keep: true}, StatusUp, ActionNone},
		{"waiting its turn", idleUp, upObs, GroupInput{StopAfter: "worker"}, StatusUp, ActionNone},
		{"an operator's sleep waits its turn too", withSleepAsk(idleUp, now), upObs, GroupInput{StopAfter: "worker"}, StatusUp, ActionNone},
		{"an operator's sleep is not held by the group's use", withSleepAsk(idleUp, now), upObs, GroupInput{Keep: true}, StatusWaitingForShutdown, ActionStop},
		{"asleep, its group in use: wakes", down, downObs, GroupInput{Wake: true}, StatusWaitingForUp, ActionStart},
		{"asleep, its group in use, a dependency not up: waits", down, downObs, GroupInput{Wake: true, StartAfter: "api"}, StatusDown, ActionNone},
		{"asleep, an app that depends on it awake: wakes", down, downObs, GroupInput{Needed: true}, StatusWaitingForUp, ActionStart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Group = tc.group
			got, act := Decide(tc.rec, in, now, p)
			if got.Status != tc.status || act != tc.act {
				t.Fatalf("Decide = %s, %q; want %s, %q (cause %q)", got.Status, act, tc.status, tc.act, got.Cause)
			}
			if tc.group.Wake && act == ActionStart && got.Cause != CauseGroupAwake {
				t.Fatalf("cause = %q, want %q", got.Cause, CauseGroupAwake)
			}
		})
	}
}

func withSleepAsk(r Record, now time.Time) Record {
	r.SleepAsk = &SleepAsk{At: now.Add(-time.Second), By: "test"}
	return r
}

package reaper

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

// dtAllowed lists every status a decision may move each status to. A status added
// to Statuses without a row here (and without rules in Decide) fails
// TestDecide_Exhaustive.
var dtAllowed = map[Status][]Status{
	StatusWaitingForInit:     {StatusUp, StatusDown, StatusWaitingForUp, StatusError},
	StatusUp:                 {StatusUp, StatusDown, StatusWaitingForUp, StatusWaitingForShutdown, StatusError},
	StatusWaitingForShutdown: {StatusWaitingForShutdown, StatusUp, StatusDown, StatusWaitingForUp, StatusError},
	StatusDown:               {StatusDown, StatusUp, StatusWaitingForUp, StatusError},
	StatusWaitingForUp:       {StatusWaitingForUp, StatusUp, StatusDown, StatusError, StatusWaitingForShutdown},
	StatusError:              {StatusError, StatusWaitingForShutdown}, // an operator's forced sleep
}

var dtStates = []paas.State{dtSBU, dtSBD, dtWTBU, "MODERATED", ""}

// dtDeployments are no deployment, then each of the five states dated after the
// action (ours) and before it (older), relative to actionAt.
func dtDeployments(actionAt time.Time) []*paas.Deployment {
	out := []*paas.Deployment{nil}
	for _, s := range []paas.DeploymentState{dtWIP, dtRunning, dtOK, dtFail, dtCancelled} {
		out = append(out, dtDep(s, actionAt.Add(5*time.Second)), dtDep(s, actionAt.Add(-DeploymentSlack-time.Second)))
	}
	// A start whose app ran and exited before it was ready (boots.go).
	return append(out, dtExited(actionAt.Add(5*time.Second)), dtExited(actionAt.Add(-DeploymentSlack-time.Second)))
}

// dtGrid calls f with every combination of status × platform state × deployment ×
// Busy × WakeAsked × idle/not × time since the action × NotShutdownable × keep-up,
// and for the statuses an operator's forced sleep stops (Error, WaitingForUp),
// with and without one.
// depIndex is the index in dtDeployments (0: none).
func dtGrid(f func(rec Record, in Input, p Policy, depIndex int)) {
	for _, s := range Statuses {
		for _, st := range dtStates {
			for _, since := range []time.Duration{5 * time.Second, 90 * time.Second, 11 * time.Minute} {
				for _, variant := range []int{0, 1, 2} {
					stopSent, forced := variant == 0, variant == 2
					if forced && s != StatusError && s != StatusWaitingForUp {
						continue
					}
					rec := dtRecord(s)
					rec.ActionAt, rec.StartSentAt = dtAgo(since), dtAgo(since)
					if stopSent {
						rec.StopSentAt = rec.ActionAt
					}
					if forced {
						rec.SleepAsk = &SleepAsk{At: dtAgo(time.Second), By: "ops", Force: true, From: s}
					}
					for di, dep := range dtDeployments(rec.ActionAt) {
						for b := range 32 {
							in := dtIn(st, dep)
							in.Busy = b&1 != 0
							in.WakeAsked = b&2 != 0
							if b&4 != 0 { // not idle: a recent request
								in.LastAccess = dtAgo(time.Minute)
							}
							in.Observation.NotShutdownable = b&8 != 0
							p := dtPolicy
							if b&16 != 0 {
								p = dtKeepUp
							}
							f(rec, in, p, di)
						}
					}
				}
			}
		}
	}
}

func TestDecide_Exhaustive(t *testing.T) {
	for _, s := range Statuses {
		if _, ok := dtAllowed[s]; !ok {
			t.Errorf("status %s has no row in dtAllowed: give it rules in Decide, then list its transitions here", s)
		}
	}
	seen := map[[2]Status]bool{}
	n, errs := 0, 0
	dtGrid(func(rec Record, in Input, p Policy, _ int) {
		n++
		if errs > 20 {
			return // enough to see what is wrong
		}
		var dep paas.Deployment
		if in.Observation.Deployment != nil {
			dep = *in.Observation.Deployment
		}
		out, act := Decide(rec, in, dtNow, p)
		where := fmt.Sprintf("%s, state %q, deployment %+v, busy %v, wake %v, access %s ago, action %s ago, not shutdownable %v, keep-up %v",
			rec.Status, in.Observation.State, in.Observation.Deployment, in.Busy, in.WakeAsked,
			dtNow.Sub(in.LastAccess), dtNow.Sub(rec.ActionAt), in.Observation.NotShutdownable, p.KeepUp(dtNow))
		for _, msg := range dtCheck(rec, in, p, dtNow, out, act) {
			errs++
			t.Errorf("%s: %s", where, msg)
		}
		if in.Observation.Deployment != nil && *in.Observation.Deployment != dep {
			t.Errorf("%s: Decide changed the deployment it was given", where)
		}
		if again, act2 := Decide(rec, in, dtNow, p); !reflect.DeepEqual(again, out) || act2 != act {
			t.Errorf("%s: a second call gave another answer", where)
		}
		seen[[2]Status{rec.Status, out.Status}] = true
	})
	// The table must not be looser than Decide: every allowed pair happens.
	for from, tos := range dtAllowed {
		for _, to := range tos {
			if !seen[[2]Status{from, to}] {
				t.Errorf("%s → %s is allowed but never happens over the grid: tighten dtAllowed or widen the grid", from, to)
			}
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d combinations", n)
}

// dtCheck returns what is wrong with one decision; the exhaustive and the random
// tests share it.
func dtCheck(rec Record, in Input, p Policy, now time.Time, out Record, act Action) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	state := in.Observation.State
	tos, known := dtAllowed[rec.Status]
	switch {
	case !known:
		fail("no allowed transitions for status %s", rec.Status)
	case !dtContains(tos, out.Status):
		fail("%s → %s is not an allowed transition", rec.Status, out.Status)
	}
	if !dtContains(Statuses, out.Status) {
		fail("returned status %q is not in Statuses", out.Status)
	}
	if known && strings.HasPrefix(out.Cause, "unknown reaper status") {
		fail("status %s is in Statuses but Decide does not handle it", rec.Status)
	}
	if !out.LastCheckAt.Equal(now) || out.PlatformState != state {
		fail("LastCheckAt %v / PlatformState %q not set", out.LastCheckAt, out.PlatformState)
	}
	// What a group says (group.go): never stopped while its group keeps it
	// (unless an operator asked) or before its turn (unless an operator forced
	// the stop of an app stuck), never started from asleep before its
	// dependencies are up.
	forced := rec.SleepAsk.stopsStuck(rec) || (rec.Status == StatusWaitingForShutdown && rec.SleepAsk.stuckStop(rec))
	if act == ActionStop && !forced && in.Group.Keep && !rec.SleepAsk.Pending(rec) {
		fail("stopped while its group is in use")
	}
	if act == ActionStop && !forced && in.Group.StopAfter != "" {
		fail("stopped before %s, which must sleep first", in.Group.StopAfter)
	}
	if act == ActionStart && in.Group.StartAfter != "" && rec.Status != StatusWaitingForUp {
		fail("started from %s before its dependency %s is up", rec.Status, in.Group.StartAfter)
	}
	changed := out.Status != rec.Status
	if changed && !out.LastStatusUpdate.Equal(now) {
		fail("status changed but LastStatusUpdate = %v", out.LastStatusUpdate)
	}
	if !changed && !out.LastStatusUpdate.Equal(rec.LastStatusUpdate) && act != ActionStart {
		// Only the chain WaitingForUp → (Down) → WaitingForUp changes it without a
		// visible change, and that one sends a start.
		fail("status unchanged but LastStatusUpdate moved")
	}
	if changed && out.Cause == "" {
		fail("status changed without a cause")
	}
	if (out.Status == StatusError) != (out.ErrorCause != "") || (out.Status == StatusError && out.ErrorCause != out.Cause) {
		fail("ErrorCause %q with status %s, cause %q", out.ErrorCause, out.Status, out.Cause)
	}
	if out.Status == StatusUp && rec.Status != StatusUp && !out.LastUpAt.Equal(now) {
		fail("entered Up with LastUpAt %v, want now", out.LastUpAt)
	}
	if !out.LastUpAt.Equal(rec.LastUpAt) && !(out.Status == StatusUp && rec.Status != StatusUp) {
		fail("LastUpAt moved without entering Up")
	}
	if out.Status == StatusDown && rec.Status != StatusDown && !out.LastDownAt.Equal(now) {
		fail("entered Down with LastDownAt %v, want now", out.LastDownAt)
	}
	if !out.LastDownAt.Equal(rec.LastDownAt) && !(rec.Status != StatusDown && (out.Status == StatusDown || act == ActionStart)) {
		fail("LastDownAt moved without entering Down")
	}
	stuck := rec.SleepAsk.stopsStuck(rec)
	if !known || (rec.Status == StatusError && !stuck) {
		if act != ActionNone {
			fail("action %q from %s", act, rec.Status)
		}
	}
	if rec.Status == StatusError && !(stuck && act == ActionStop) {
		want := rec
		want.LastCheckAt, want.PlatformState = now, state
		if !reflect.DeepEqual(out, want) {
			fail("Error was not left alone:\n%s", dtDiff(out, want))
		}
	}
	if (out.Status == StatusWaitingForUp || out.Status == StatusWaitingForShutdown) && changed && !out.ActionAt.Equal(now) {
		fail("entered %s with ActionAt %v, want now", out.Status, out.ActionAt)
	}
	if (out.Status == StatusWaitingForUp || out.Status == StatusWaitingForShutdown) && now.Sub(out.ActionAt) >= p.FailTimeout {
		fail("still %s at the fail timeout (action %v ago)", out.Status, now.Sub(out.ActionAt))
	}
	switch act {
	case ActionNone:
		if out.StartSentAt != rec.StartSentAt {
			fail("StartSentAt moved without a start")
		}
	case ActionStart:
		if state != paas.StateShouldBeDown {
			fail("start while the platform says %s", state)
		}
		if rec.Boots.backingOff(now) || out.Boots.backingOff(now) {
			fail("start during a failed boot's back-off (until %v)", out.Boots.RetryAt)
		}
		retried := out.Boots != nil && (rec.Boots == nil || out.Boots.Start != rec.Boots.Start || !rec.Boots.backingOff(now))
		if out.Status != StatusWaitingForUp || !out.StartSentAt.Equal(now) {
			fail("start with status %s, StartSentAt %v", out.Status, out.StartSentAt)
		}
		if !out.RetryStart {
			fail("a start is taken as accepted before it is sent (RetryStart not set)")
		}
		resend := rec.Status == StatusWaitingForUp && out.LastDownAt.Equal(rec.LastDownAt)
		switch {
		case resend:
			// An accepted start is sent again after RestartAfter without
			// progress; one not known to be accepted after UncertainStartGrace.
			wait := RestartAfter
			if rec.RetryStart {
				wait = UncertainStartGrace
			}
			if now.Sub(latest(rec.StartSentAt, rec.ActionAt)) < wait && !retried {
				fail("start sent again %v after the last one", now.Sub(latest(rec.StartSentAt, rec.ActionAt)))
			}

			if !out.ActionAt.Equal(rec.ActionAt) {
				fail("a start sent again moved ActionAt")
			}
		case !in.WakeAsked && !p.KeepUp(now) && !in.Group.Wake && !in.Group.Needed:
			fail("start with no wake asked, no keep-up range, and no group or dependent awake")
		case !out.ActionAt.Equal(now):
			fail("start with ActionAt %v, want now", out.ActionAt)
		}
	case ActionStop:
		if stuck || (rec.Status == StatusWaitingForShutdown && rec.SleepAsk.stuckStop(rec)) {
			// An operator's forced stop of an app in Error (nothing in flight) or
			// stuck waking: whatever the platform, the idle clock or the ranges say.
			if out.Status != StatusWaitingForShutdown || (rec.Status == StatusError && in.Busy) {
				fail("forced stop from %s to %s, busy %v", rec.Status, out.Status, in.Busy)
			}
			break
		}
		unsent := rec.Status == StatusWaitingForShutdown && rec.StopSentAt.Before(rec.ActionAt)
		if (rec.Status != StatusUp && !unsent) || out.Status != StatusWaitingForShutdown || state != paas.StateShouldBeUp {
			fail("stop from %s to %s with the platform at %s", rec.Status, out.Status, state)
		}
		if in.Busy || p.KeepUp(now) || in.Observation.NotShutdownable {
			fail("stop while busy %v, keep-up %v, not shutdownable %v", in.Busy, p.KeepUp(now), in.Observation.NotShutdownable)
		}
		if idle := now.Sub(latest(in.LastAccess, rec.LastUpAt)); idle < p.GracePeriod {
			fail("stop after %v idle, grace period %v", idle, p.GracePeriod)
		}
		if !out.ActionAt.Equal(now) {
			fail("stop with ActionAt %v", out.ActionAt)
		}
	default:
		fail("unknown action %q", act)
	}
	return bad
}

func dtContains(list []Status, s Status) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Over the grid: the deployment changes the decision only where NeedsDeployment
// says Decide looks at it, and where it says so, some deployment does change it.
func TestNeedsDeployment_Grid(t *testing.T) {
	type key struct {
		rec Record
		in  Input
		p   string
	}
	differs := map[key]bool{}
	needs := map[key]bool{}
	dtGrid(func(rec Record, in Input, p Policy, di int) {
		need := NeedsDeployment(rec, in.Observation.State, in, dtNow, p)
		with, a1 := Decide(rec, in, dtNow, p)
		bare := in
		bare.Observation.Deployment = nil
		without, a2 := Decide(rec, bare, dtNow, p)
		diff := !reflect.DeepEqual(with, without) || a1 != a2
		if diff && !need {
			t.Errorf("%s, state %q, deployment %+v: the deployment changed the decision but NeedsDeployment is false",
				rec.Status, in.Observation.State, in.Observation.Deployment)
		}
		k := key{rec, bare, fmt.Sprint(p.KeepUp(dtNow))}
		differs[k] = differs[k] || diff
		if di == 0 {
			needs[k] = need
		}
	})
	for k, need := range needs {
		if need && !differs[k] {
			t.Errorf("%s, state %q: NeedsDeployment is true but no deployment changes the decision",
				k.rec.Status, k.in.Observation.State)
		}
	}
}

// For random records, inputs and policies: Decide with the deployment and without
// it differ only when NeedsDeployment is true.
func TestNeedsDeployment_Random(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	rng := rand.New(rand.NewPCG(1, 2))
	statuses := append(append([]Status{}, Statuses...), "BogusStatus")
	states := []paas.State{dtSBU, dtSBD, dtWTBU, "MODERATED", ""}
	depStates := []paas.DeploymentState{dtWIP, dtRunning, dtOK, dtFail, dtCancelled, "QUEUED"}
	dur := func(max time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(max))) }
	ago := func(max time.Duration) time.Time { return dtNow.Add(-dur(max)) }
	for i := range n {
		rec := dtRecord(statuses[rng.IntN(len(statuses))])
		rec.ActionAt, rec.StartSentAt, rec.LastUpAt = ago(30*time.Minute), ago(30*time.Minute), ago(2*time.Hour)
		if rng.IntN(3) == 0 {
			rec.StartSentAt = time.Time{}
		}
		in := Input{
			Observation: paas.Observation{
				State:           states[rng.IntN(len(states))],
				NotShutdownable: rng.IntN(4) == 0,
				Deployment: &paas.Deployment{State: depStates[rng.IntN(len(depStates))],
					At: rec.ActionAt.Add(time.Duration(rng.IntN(60)-30) * time.Second)},
			},
			LastAccess: ago(time.Hour), Busy: rng.IntN(4) == 0, WakeAsked: rng.IntN(2) == 0,
		}
		p := Policy{GracePeriod: time.Minute + dur(30*time.Minute), FailTimeout: time.Minute + dur(20*time.Minute)}
		if rng.IntN(4) == 0 {
			p.MustBeUp = []Range{{Start: 13 * 60, End: 15 * 60, Location: time.UTC}}
		}
		with, a1 := Decide(rec, in, dtNow, p)
		bare := in
		bare.Observation.Deployment = nil
		without, a2 := Decide(rec, bare, dtNow, p)
		if (!reflect.DeepEqual(with, without) || a1 != a2) && !NeedsDeployment(rec, in.Observation.State, in, dtNow, p) {
			t.Fatalf("case %d: %s, state %q, deployment %+v: decision depends on the deployment but NeedsDeployment is false\nwith: %+v %q\nwithout: %+v %q",
				i, rec.Status, in.Observation.State, in.Observation.Deployment, with, a1, without, a2)
		}
	}
}

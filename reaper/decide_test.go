package reaper

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

// Test helpers of the decision tests carry a dt prefix: other files of the
// package have their own tests.

// dtNow is a Wednesday, 14:00 UTC.
var dtNow = time.Date(2025, 3, 12, 14, 0, 0, 0, time.UTC)

var dtPolicy = Policy{GracePeriod: 15 * time.Minute, FailTimeout: 10 * time.Minute}

// dtKeepUp is dtPolicy with a keep-up range around dtNow (Wednesdays 13:00–15:00 UTC).
var dtKeepUp = Policy{GracePeriod: 15 * time.Minute, FailTimeout: 10 * time.Minute,
	MustBeUp: []Range{{Days: dtDays(time.Wednesday), Start: 13 * 60, End: 15 * 60, Location: time.UTC}}}

// dtOtherDay has a keep-up range on Thursdays only.
var dtOtherDay = Policy{GracePeriod: 15 * time.Minute, FailTimeout: 10 * time.Minute,
	MustBeUp: []Range{{Days: dtDays(time.Thursday), Start: 13 * 60, End: 15 * 60, Location: time.UTC}}}

func dtDays(ds ...time.Weekday) (out [7]bool) {
	for _, d := range ds {
		out[d] = true
	}
	return out
}

func dtAgo(d time.Duration) time.Time { return dtNow.Add(-d) }

// dtRecord is a record in status s whose clocks are all distinct and in the past,
// so a test sees which ones Decide changed.
func dtRecord(s Status) Record {
	r := Record{
		AppID: "app_1", Owner: "orga_1", Name: "one", Status: s,
		Cause: "previous cause", PlatformState: "PREVIOUS",
		LastStatusUpdate: dtAgo(time.Hour), LastUpAt: dtAgo(2 * time.Hour),
		LastDownAt: dtAgo(3 * time.Hour), ActionAt: dtAgo(2 * time.Minute),
		StartSentAt: dtAgo(2 * time.Minute), LastCheckAt: dtAgo(5 * time.Second), Term: 7,
	}
	if s == StatusError {
		r.ErrorCause = "previous cause"
	}
	return r
}

func dtWith(r Record, f func(*Record)) Record { f(&r); return r }

func dtDep(s paas.DeploymentState, at time.Time) *paas.Deployment {
	return &paas.Deployment{State: s, Action: "DEPLOY", At: at, Cause: "exit code 1"}
}

// dtIn is an input with an old last access (the app is idle for dtPolicy).
func dtIn(state paas.State, dep *paas.Deployment) Input {
	return Input{Observation: paas.Observation{State: state, Deployment: dep}, LastAccess: dtAgo(time.Hour)}
}

func dtInWith(state paas.State, dep *paas.Deployment, f func(*Input)) Input {
	in := dtIn(state, dep)
	f(&in)
	return in
}

// dtMove is what every status change does: status, cause, error cause, and
// LastStatusUpdate. The Up and Down clocks are set by each row, explicitly.
func dtMove(r *Record, s Status, cause string) {
	r.Status, r.Cause, r.ErrorCause, r.LastStatusUpdate = s, cause, "", dtNow
	if s == StatusError {
		r.ErrorCause = cause
	}
}

type dtCase struct {
	name   string
	rec    Record
	in     Input
	policy *Policy // nil: dtPolicy
	act    Action
	// want changes the input record into the expected one, beyond LastCheckAt and
	// PlatformState which every decision sets; nil means nothing else changes.
	want func(r *Record)
}

const (
	dtSBU  = paas.StateShouldBeUp
	dtSBD  = paas.StateShouldBeDown
	dtWTBU = paas.StateWantsToBeUp
)

var (
	dtOK        = paas.DeploymentOK
	dtFail      = paas.DeploymentFail
	dtCancelled = paas.DeploymentCancelled
	dtWIP       = paas.DeploymentWIP
	dtRunning   = paas.DeploymentTaskRunning
)

func dtRun(t *testing.T, cases []dtCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate row %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			p := dtPolicy
			if c.policy != nil {
				p = *c.policy
			}
			want := c.rec
			want.LastCheckAt = dtNow
			want.PlatformState = c.in.Observation.State
			if c.want != nil {
				c.want(&want)
			}
			got, act := Decide(c.rec, c.in, dtNow, p)
			if act != c.act {
				t.Errorf("action = %q, want %q", act, c.act)
			}
			if d := dtDiff(got, want); d != "" {
				t.Errorf("record differs (got / want):\n%s", d)
			}
		})
	}
}

// dtDiff lists the fields of two records that differ.
func dtDiff(got, want Record) string {
	var b strings.Builder
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if !reflect.DeepEqual(g, w) {
			fmt.Fprintf(&b, "  %s: %v / %v\n", gv.Type().Field(i).Name, g, w)
		}
	}
	return b.String()
}

func TestDecide_UnexpectedPlatformState(t *testing.T) {
	var cases []dtCase
	for _, s := range Statuses {
		for _, st := range []paas.State{"MODERATED", "DEFAULT_OF_PAYMENT", "", "should_be_up"} {
			c := dtCase{name: fmt.Sprintf("%s/%q", s, st), rec: dtRecord(s),
				in: dtInWith(st, dtDep(dtOK, dtNow), func(in *Input) { in.WakeAsked = true })}
			if s != StatusError {
				cause := "unexpected platform state " + string(st)
				if st == "" {
					cause = "unexpected platform state (empty)"
				}
				c.want = func(r *Record) { dtMove(r, StatusError, cause) }
			}
			cases = append(cases, c)
		}
	}
	dtRun(t, cases)
}

func TestDecide_ErrorIsLeftAlone(t *testing.T) {
	var cases []dtCase
	for _, st := range []paas.State{dtSBU, dtSBD, dtWTBU} {
		cases = append(cases, dtCase{name: string(st), rec: dtRecord(StatusError),
			in:     dtInWith(st, dtDep(dtFail, dtNow), func(in *Input) { in.WakeAsked = true }),
			policy: &dtKeepUp})
	}
	dtRun(t, cases)
}

func TestDecide_UnknownStatus(t *testing.T) {
	dtRun(t, []dtCase{
		{name: "named", rec: dtRecord("Hibernating"), in: dtIn(dtSBU, nil),
			want: func(r *Record) { dtMove(r, StatusError, "unknown reaper status Hibernating") }},
		{name: "empty", rec: dtRecord(""), in: dtIn(dtSBD, nil),
			want: func(r *Record) { dtMove(r, StatusError, "unknown reaper status (empty)") }},
	})
}

func TestDecide_WaitingForInit(t *testing.T) {
	rec := dtRecord(StatusWaitingForInit)
	toWaitingForUp := func(r *Record) { dtMove(r, StatusWaitingForUp, "starting from outside"); r.ActionAt = dtNow }
	dtRun(t, []dtCase{
		{name: "SHOULD_BE_UP is Up", rec: rec, in: dtIn(dtSBU, nil),
			want: func(r *Record) { dtMove(r, StatusUp, "the platform says it is up"); r.LastUpAt = dtNow }},
		{name: "SHOULD_BE_UP with a wake ask is Up, no start", rec: rec,
			in:   dtInWith(dtSBU, nil, func(in *Input) { in.WakeAsked = true }),
			want: func(r *Record) { dtMove(r, StatusUp, "the platform says it is up"); r.LastUpAt = dtNow }},
		{name: "SHOULD_BE_DOWN is Down", rec: rec, in: dtIn(dtSBD, nil),
			want: func(r *Record) { dtMove(r, StatusDown, "the platform says it is down"); r.LastDownAt = dtNow }},
		{name: "SHOULD_BE_DOWN with a wake ask chains to a start", rec: rec,
			in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked = true }), act: ActionStart,
			want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseWakeAsked)
				r.LastDownAt, r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtNow}
			}},
		{name: "SHOULD_BE_DOWN inside a keep-up range chains to a start", rec: rec, in: dtIn(dtSBD, nil),
			policy: &dtKeepUp, act: ActionStart,
			want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseKeepUp)
				r.LastDownAt, r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtNow}
			}},
		{name: "WANTS_TO_BE_UP, FAIL is Error", rec: rec, in: dtIn(dtWTBU, dtDep(dtFail, dtAgo(time.Hour))),
			want: func(r *Record) { dtMove(r, StatusError, "the last deployment failed: exit code 1") }},
		{name: "WANTS_TO_BE_UP, FAIL without a cause", rec: rec,
			in:   dtIn(dtWTBU, &paas.Deployment{State: dtFail, At: dtAgo(time.Hour)}),
			want: func(r *Record) { dtMove(r, StatusError, "the last deployment failed") }},
		{name: "WANTS_TO_BE_UP, CANCELLED is Down", rec: rec, in: dtIn(dtWTBU, dtDep(dtCancelled, dtAgo(time.Hour))),
			want: func(r *Record) { dtMove(r, StatusDown, "the last deployment was cancelled"); r.LastDownAt = dtNow }},
		{name: "WANTS_TO_BE_UP, CANCELLED with a wake ask is Down, no start", rec: rec,
			in:   dtInWith(dtWTBU, dtDep(dtCancelled, dtAgo(time.Hour)), func(in *Input) { in.WakeAsked = true }),
			want: func(r *Record) { dtMove(r, StatusDown, "the last deployment was cancelled"); r.LastDownAt = dtNow }},
		{name: "WANTS_TO_BE_UP, OK is Down", rec: rec, in: dtIn(dtWTBU, dtDep(dtOK, dtAgo(time.Hour))),
			want: func(r *Record) {
				dtMove(r, StatusDown, "the last deployment ended but the app is not up")
				r.LastDownAt = dtNow
			}},
		{name: "WANTS_TO_BE_UP, WIP is WaitingForUp", rec: rec, in: dtIn(dtWTBU, dtDep(dtWIP, dtAgo(time.Minute))), want: toWaitingForUp},
		{name: "WANTS_TO_BE_UP, TASK_RUNNING is WaitingForUp", rec: rec, in: dtIn(dtWTBU, dtDep(dtRunning, dtAgo(time.Minute))), want: toWaitingForUp},
		{name: "WANTS_TO_BE_UP, unknown deployment state is WaitingForUp", rec: rec, in: dtIn(dtWTBU, dtDep("QUEUED", dtAgo(time.Minute))), want: toWaitingForUp},
		{name: "WANTS_TO_BE_UP, no deployment is WaitingForUp", rec: rec, in: dtIn(dtWTBU, nil), want: toWaitingForUp},
	})
}

func TestDecide_Up(t *testing.T) {
	rec := dtRecord(StatusUp) // up for 2 h; dtIn's last access is 1 h old: idle
	stop := func(r *Record) { dtMove(r, StatusWaitingForShutdown, "idle for 15m0s"); r.ActionAt = dtNow }
	dtRun(t, []dtCase{
		{name: "SHOULD_BE_DOWN is Down: stopped from outside", rec: rec, in: dtIn(dtSBD, nil),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped from outside"); r.LastDownAt = dtNow }},
		{name: "SHOULD_BE_DOWN inside a keep-up range starts it again", rec: rec, in: dtIn(dtSBD, nil),
			policy: &dtKeepUp, act: ActionStart,
			want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseKeepUp)
				r.LastDownAt, r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtNow}
			}},
		{name: "WANTS_TO_BE_UP is WaitingForUp: restarting from outside", rec: rec, in: dtIn(dtWTBU, nil),
			want: func(r *Record) { dtMove(r, StatusWaitingForUp, "restarting from outside"); r.ActionAt = dtNow }},
		{name: "SHOULD_BE_UP, recent access: stays", rec: rec,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.LastAccess = dtAgo(15*time.Minute - time.Second) })},
		{name: "SHOULD_BE_UP, busy: stays", rec: rec,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.Busy = true })},
		{name: "SHOULD_BE_UP, inside a keep-up range: stays", rec: rec, in: dtIn(dtSBU, nil), policy: &dtKeepUp},
		{name: "SHOULD_BE_UP, keep-up range on another day: stops", rec: rec, in: dtIn(dtSBU, nil),
			policy: &dtOtherDay, act: ActionStop, want: stop},
		{name: "SHOULD_BE_UP, just came up, never accessed: stays (full grace period)",
			rec: dtWith(rec, func(r *Record) { r.LastUpAt = dtAgo(14 * time.Minute) }),
			in:  dtInWith(dtSBU, nil, func(in *Input) { in.LastAccess = time.Time{} })},
		{name: "SHOULD_BE_UP, up for exactly the grace period, never accessed: stops",
			rec: dtWith(rec, func(r *Record) { r.LastUpAt = dtAgo(15 * time.Minute) }),
			in:  dtInWith(dtSBU, nil, func(in *Input) { in.LastAccess = time.Time{} }), act: ActionStop, want: stop},
		{name: "SHOULD_BE_UP, idle for exactly the grace period: stops", rec: rec,
			in:  dtInWith(dtSBU, nil, func(in *Input) { in.LastAccess = dtAgo(15 * time.Minute) }),
			act: ActionStop, want: stop},
		{name: "SHOULD_BE_UP, idle, not shutdownable: stays, says why", rec: rec,
			in:   dtInWith(dtSBU, nil, func(in *Input) { in.Observation.NotShutdownable = true }),
			want: func(r *Record) { r.Cause = "the platform says it must not be stopped" }},
		{name: "SHOULD_BE_UP, not idle, not shutdownable: nothing", rec: rec,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.Observation.NotShutdownable = true; in.Busy = true })},
		{name: "SHOULD_BE_UP, idle, no deployment: stops", rec: rec, in: dtIn(dtSBU, nil), act: ActionStop, want: stop},
		{name: "SHOULD_BE_UP, idle, OK: stops", rec: rec, in: dtIn(dtSBU, dtDep(dtOK, dtAgo(3*time.Hour))), act: ActionStop, want: stop},
		{name: "SHOULD_BE_UP, idle, WIP: waits", rec: rec, in: dtIn(dtSBU, dtDep(dtWIP, dtAgo(time.Minute)))},
		{name: "SHOULD_BE_UP, idle, TASK_RUNNING: waits", rec: rec, in: dtIn(dtSBU, dtDep(dtRunning, dtAgo(time.Minute)))},
		{name: "SHOULD_BE_UP, idle, unknown deployment state: waits", rec: rec, in: dtIn(dtSBU, dtDep("QUEUED", dtAgo(time.Minute)))},
		{name: "SHOULD_BE_UP, idle, FAIL: Error", rec: rec, in: dtIn(dtSBU, dtDep(dtFail, dtAgo(time.Hour))),
			want: func(r *Record) {
				dtMove(r, StatusError, "the last deployment failed: it cannot be put to sleep safely")
			}},
		{name: "SHOULD_BE_UP, idle, CANCELLED: Error", rec: rec, in: dtIn(dtSBU, dtDep(dtCancelled, dtAgo(time.Hour))),
			want: func(r *Record) {
				dtMove(r, StatusError, "the last deployment was cancelled: it cannot be put to sleep safely")
			}},
		{name: "SHOULD_BE_UP, busy, FAIL: nothing (deployment not looked at)", rec: rec,
			in: dtInWith(dtSBU, dtDep(dtFail, dtAgo(time.Hour)), func(in *Input) { in.Busy = true })},
		{name: "SHOULD_BE_UP, wake asked and idle: stops (an ask left over is not traffic)", rec: rec,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.WakeAsked = true }), act: ActionStop, want: stop},
	})
}

func TestDecide_WaitingForShutdown(t *testing.T) {
	rec := dtRecord(StatusWaitingForShutdown) // stop sent 2 min ago
	rec.StopSentAt = rec.ActionAt
	unsent := dtWith(rec, func(r *Record) { r.StopSentAt = time.Time{} })
	dtRun(t, []dtCase{
		{name: "SHOULD_BE_UP, stop never sent, still idle: stop again", rec: unsent, in: dtIn(dtSBU, nil),
			act: ActionStop, want: func(r *Record) { r.ActionAt = dtNow }},
		{name: "SHOULD_BE_UP, stop never sent, a request since: back to Up", rec: unsent,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.Busy = true }),
			want: func(r *Record) {
				dtMove(r, StatusUp, "the stop was never sent, and the app is no longer idle")
				r.LastUpAt = dtNow
			}},
		{name: "SHOULD_BE_UP, stop never sent, wake asked: back to Up", rec: unsent,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.WakeAsked = true; in.LastAccess = dtNow }),
			want: func(r *Record) {
				dtMove(r, StatusUp, "the stop was never sent, and the app is no longer idle")
				r.LastUpAt = dtNow
			}},
		{name: "SHOULD_BE_UP, stop never sent, the last deployment failed: Error", rec: unsent,
			in: dtIn(dtSBU, dtDep(dtFail, dtAgo(3*time.Hour))),
			want: func(r *Record) {
				dtMove(r, StatusError, "the last deployment failed: it cannot be put to sleep safely")
			}},
		{name: "SHOULD_BE_DOWN is Down", rec: rec, in: dtIn(dtSBD, nil),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped"); r.LastDownAt = dtNow }},
		{name: "SHOULD_BE_DOWN past the fail timeout is still Down",
			rec: dtWith(rec, func(r *Record) { r.ActionAt = dtAgo(time.Hour) }), in: dtIn(dtSBD, nil),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped"); r.LastDownAt = dtNow }},
		{name: "SHOULD_BE_DOWN with a wake ask: Down then start at once", rec: rec,
			in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked = true }), act: ActionStart,
			want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseWakeAsked)
				r.LastDownAt, r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtNow}
			}},
		{name: "WANTS_TO_BE_UP is WaitingForUp", rec: rec, in: dtIn(dtWTBU, nil),
			want: func(r *Record) { dtMove(r, StatusWaitingForUp, "restarting from outside"); r.ActionAt = dtNow }},
		{name: "WANTS_TO_BE_UP with a wake ask: WaitingForUp, no start", rec: rec,
			in:   dtInWith(dtWTBU, nil, func(in *Input) { in.WakeAsked = true }),
			want: func(r *Record) { dtMove(r, StatusWaitingForUp, "restarting from outside"); r.ActionAt = dtNow }},
		{name: "SHOULD_BE_UP lingering: waits", rec: rec, in: dtIn(dtSBU, nil)},
		{name: "SHOULD_BE_UP with a wake ask: waits for the stop, no start", rec: rec,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.WakeAsked = true; in.Busy = true })},
		{name: "SHOULD_BE_UP just before the fail timeout: waits",
			rec: dtWith(rec, func(r *Record) { r.ActionAt = dtAgo(10*time.Minute - time.Second) }), in: dtIn(dtSBU, nil)},
		{name: "SHOULD_BE_UP at the fail timeout: Error",
			rec: dtWith(rec, func(r *Record) { r.ActionAt = dtAgo(10 * time.Minute) }), in: dtIn(dtSBU, nil),
			want: func(r *Record) { dtMove(r, StatusError, "did not stop within the fail timeout") }},
	})
}

func TestDecide_Down(t *testing.T) {
	rec := dtRecord(StatusDown)
	start := func(cause string) func(r *Record) {
		return func(r *Record) {
			dtMove(r, StatusWaitingForUp, cause)
			r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, true // until the platform accepts it
			r.Wake = &WakeTimes{AskedAt: dtNow}
		}
	}
	dtRun(t, []dtCase{
		{name: "SHOULD_BE_UP is Up: started from outside, full grace period", rec: rec, in: dtIn(dtSBU, nil),
			want: func(r *Record) { dtMove(r, StatusUp, "started from outside"); r.LastUpAt = dtNow }},
		{name: "SHOULD_BE_UP with a wake ask: Up, no start", rec: rec,
			in:   dtInWith(dtSBU, nil, func(in *Input) { in.WakeAsked = true }),
			want: func(r *Record) { dtMove(r, StatusUp, "started from outside"); r.LastUpAt = dtNow }},
		{name: "WANTS_TO_BE_UP is WaitingForUp", rec: rec, in: dtIn(dtWTBU, nil),
			want: func(r *Record) { dtMove(r, StatusWaitingForUp, "starting from outside"); r.ActionAt = dtNow }},
		{name: "WANTS_TO_BE_UP with a wake ask: WaitingForUp, no start", rec: rec,
			in: dtInWith(dtWTBU, nil, func(in *Input) { in.WakeAsked = true }), policy: &dtKeepUp,
			want: func(r *Record) { dtMove(r, StatusWaitingForUp, "starting from outside"); r.ActionAt = dtNow }},
		{name: "SHOULD_BE_DOWN, nobody asks: sleeps on", rec: rec, in: dtIn(dtSBD, nil)},
		{name: "SHOULD_BE_DOWN, keep-up range on another day: sleeps on", rec: rec, in: dtIn(dtSBD, nil), policy: &dtOtherDay},
		{name: "SHOULD_BE_DOWN, wake asked: start", rec: rec,
			in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked = true }), act: ActionStart, want: start(CauseWakeAsked)},
		{name: "SHOULD_BE_DOWN, wake asked inside a keep-up range: start, the ask is the cause", rec: rec,
			in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked = true }), policy: &dtKeepUp,
			act: ActionStart, want: start(CauseWakeAsked)},
		{name: "SHOULD_BE_DOWN, inside a keep-up range: start", rec: rec, in: dtIn(dtSBD, nil), policy: &dtKeepUp,
			act: ActionStart, want: start(CauseKeepUp)},
		{name: "SHOULD_BE_DOWN, wake asked, old failed deployment: start (not looked at)", rec: rec,
			in:  dtInWith(dtSBD, dtDep(dtFail, dtAgo(time.Hour)), func(in *Input) { in.WakeAsked = true }),
			act: ActionStart, want: start(CauseWakeAsked)},
	})
}

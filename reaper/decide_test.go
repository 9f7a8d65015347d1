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

func TestDecide_WaitingForUp(t *testing.T) {
	rec := dtRecord(StatusWaitingForUp) // start sent 2 min ago
	ours := dtAgo(time.Minute)          // dated after the start
	older := dtAgo(2*time.Minute + DeploymentSlack + time.Second)
	edge := dtAgo(2*time.Minute + DeploymentSlack) // exactly ActionAt − slack: ours
	late := func(r *Record) { r.ActionAt, r.StartSentAt = dtAgo(10*time.Minute), dtAgo(time.Minute) }
	up := func(r *Record) { dtMove(r, StatusUp, "woke up"); r.LastUpAt = dtNow }
	failed := func(r *Record) { dtMove(r, StatusError, "the start failed: exit code 1") }
	timedOut := func(r *Record) { dtMove(r, StatusError, "did not wake up within the fail timeout") }
	cancelled := func(r *Record) { dtMove(r, StatusDown, "the start was cancelled"); r.LastDownAt = dtNow }
	resent := func(r *Record) { r.StartSentAt, r.RetryStart = dtNow, true }
	withSent := func(sent, action time.Duration) Record {
		return dtWith(rec, func(r *Record) { r.StartSentAt, r.ActionAt = dtAgo(sent), dtAgo(action) })
	}
	withAction := func(action time.Duration) Record {
		return dtWith(rec, func(r *Record) { r.StartSentAt, r.ActionAt = time.Time{}, dtAgo(action) })
	}
	dtRun(t, []dtCase{
		// SHOULD_BE_UP
		{name: "SHOULD_BE_UP, no deployment: Up", rec: rec, in: dtIn(dtSBU, nil), want: up},
		{name: "SHOULD_BE_UP, ours OK: Up", rec: rec, in: dtIn(dtSBU, dtDep(dtOK, ours)), want: up},
		{name: "SHOULD_BE_UP, ours WIP: waits", rec: rec, in: dtIn(dtSBU, dtDep(dtWIP, ours))},
		{name: "SHOULD_BE_UP, ours TASK_RUNNING: waits", rec: rec, in: dtIn(dtSBU, dtDep(dtRunning, ours))},
		{name: "SHOULD_BE_UP, ours FAIL: Error", rec: rec, in: dtIn(dtSBU, dtDep(dtFail, ours)), want: failed},
		{name: "SHOULD_BE_UP, ours CANCELLED: Up", rec: rec, in: dtIn(dtSBU, dtDep(dtCancelled, ours)), want: up},
		{name: "SHOULD_BE_UP, older FAIL: Up", rec: rec, in: dtIn(dtSBU, dtDep(dtFail, older)), want: up},
		{name: "SHOULD_BE_UP, older WIP: Up", rec: rec, in: dtIn(dtSBU, dtDep(dtWIP, older)), want: up},
		{name: "SHOULD_BE_UP, FAIL dated exactly ActionAt - slack: ours, Error", rec: rec, in: dtIn(dtSBU, dtDep(dtFail, edge)), want: failed},
		{name: "SHOULD_BE_UP, ours WIP at the fail timeout: Error", rec: dtWith(rec, late), in: dtIn(dtSBU, dtDep(dtWIP, ours)), want: timedOut},
		{name: "SHOULD_BE_UP, no deployment past the fail timeout: Up all the same", rec: dtWith(rec, late), in: dtIn(dtSBU, nil), want: up},
		{name: "SHOULD_BE_UP, wake asked: Up, no start", rec: rec,
			in: dtInWith(dtSBU, nil, func(in *Input) { in.WakeAsked = true }), want: up},
		// WANTS_TO_BE_UP
		{name: "WANTS_TO_BE_UP, no deployment: waits", rec: rec, in: dtIn(dtWTBU, nil)},
		{name: "WANTS_TO_BE_UP, ours WIP: waits", rec: rec, in: dtIn(dtWTBU, dtDep(dtWIP, ours))},
		{name: "WANTS_TO_BE_UP, ours TASK_RUNNING: waits", rec: rec, in: dtIn(dtWTBU, dtDep(dtRunning, ours))},
		{name: "WANTS_TO_BE_UP, ours OK: waits", rec: rec, in: dtIn(dtWTBU, dtDep(dtOK, ours))},
		{name: "WANTS_TO_BE_UP, ours FAIL: Error", rec: rec, in: dtIn(dtWTBU, dtDep(dtFail, ours)), want: failed},
		{name: "WANTS_TO_BE_UP, ours CANCELLED: Down", rec: rec, in: dtIn(dtWTBU, dtDep(dtCancelled, ours)), want: cancelled},
		{name: "WANTS_TO_BE_UP, ours CANCELLED, wake asked: Down, no start", rec: rec,
			in: dtInWith(dtWTBU, dtDep(dtCancelled, ours), func(in *Input) { in.WakeAsked = true }), want: cancelled},
		{name: "WANTS_TO_BE_UP, older CANCELLED: waits", rec: rec, in: dtIn(dtWTBU, dtDep(dtCancelled, older))},
		{name: "WANTS_TO_BE_UP, older FAIL: waits", rec: rec, in: dtIn(dtWTBU, dtDep(dtFail, older))},
		{name: "WANTS_TO_BE_UP, no deployment at the fail timeout: Error", rec: dtWith(rec, late), in: dtIn(dtWTBU, nil), want: timedOut},
		// SHOULD_BE_DOWN
		{name: "SHOULD_BE_DOWN, ours FAIL: Error", rec: rec, in: dtIn(dtSBD, dtDep(dtFail, ours)), want: failed},
		{name: "SHOULD_BE_DOWN, ours CANCELLED: Down", rec: rec, in: dtIn(dtSBD, dtDep(dtCancelled, ours)), want: cancelled},
		{name: "SHOULD_BE_DOWN, ours CANCELLED, wake asked: Down then start again", rec: rec,
			in:  dtInWith(dtSBD, dtDep(dtCancelled, ours), func(in *Input) { in.WakeAsked = true }),
			act: ActionStart, want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseWakeAsked)
				r.LastDownAt, r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtNow}
			}},
		{name: "SHOULD_BE_DOWN, ours WIP: waits (the deployment has not begun to show)", rec: withSent(2*time.Minute, 2*time.Minute),
			in: dtIn(dtSBD, dtDep(dtWIP, ours))},
		{name: "SHOULD_BE_DOWN, ours TASK_RUNNING: waits", rec: rec, in: dtIn(dtSBD, dtDep(dtRunning, ours))},
		{name: "SHOULD_BE_DOWN, ours OK: Down (stopped right after it woke)", rec: rec, in: dtIn(dtSBD, dtDep(dtOK, ours)),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped right after it woke up"); r.LastDownAt = dtNow }},
		{name: "SHOULD_BE_DOWN, the stop's UNDEPLOY OK within the slack: not ours, waits", rec: withSent(5*time.Second, 5*time.Second),
			in: dtIn(dtSBD, &paas.Deployment{State: dtOK, Action: "UNDEPLOY", At: dtAgo(8 * time.Second)})},
		{name: "SHOULD_BE_DOWN, the stop's UNDEPLOY after an older DEPLOY: not ours, waits", rec: withSent(5*time.Second, 5*time.Second),
			in: dtIn(dtSBD, &paas.Deployment{State: dtOK, Action: "UNDEPLOY", At: dtAgo(8 * time.Second),
				Before: dtDep(dtOK, dtAgo(3*time.Hour))})},
		{name: "SHOULD_BE_DOWN, an UNDEPLOY after ours OK: stopped from outside after it woke, Down", rec: withSent(5*time.Second, 5*time.Second),
			in: dtIn(dtSBD, &paas.Deployment{State: dtOK, Action: "UNDEPLOY", At: dtAgo(time.Second),
				Before: dtDep(dtOK, dtAgo(4*time.Second))}),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped right after it woke up"); r.LastDownAt = dtNow }},
		{name: "SHOULD_BE_DOWN, an UNDEPLOY after ours OK, wake asked: Down, then started again at once", rec: withSent(5*time.Second, 5*time.Second),
			in: dtInWith(dtSBD, &paas.Deployment{State: dtOK, Action: "UNDEPLOY", At: dtAgo(time.Second),
				Before: dtDep(dtOK, dtAgo(4*time.Second))}, func(in *Input) { in.WakeAsked = true }),
			act: ActionStart, want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseWakeAsked)
				r.LastDownAt, r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtNow}
			}},
		{name: "SHOULD_BE_DOWN, an UNDEPLOY after ours FAIL: the start failed, Error", rec: withSent(5*time.Second, 5*time.Second),
			in: dtIn(dtSBD, &paas.Deployment{State: dtOK, Action: "UNDEPLOY", At: dtAgo(time.Second),
				Before: dtDep(dtFail, dtAgo(4*time.Second))}),
			want: func(r *Record) { dtMove(r, StatusError, "the start failed: exit code 1") }},
		{name: "SHOULD_BE_DOWN, none, the start call failed (RetryStart): start again at once",
			rec: dtWith(withSent(5*time.Second, 5*time.Second), func(r *Record) { r.RetryStart = true }), in: dtIn(dtSBD, nil),
			act: ActionStart, want: resent},
		{name: "SHOULD_BE_DOWN, none, a start not known to be accepted, sent a grace ago: start again",
			rec: dtWith(withSent(UncertainStartGrace, UncertainStartGrace), func(r *Record) { r.RetryStart = true }), in: dtIn(dtSBD, nil),
			act: ActionStart, want: resent},
		{name: "SHOULD_BE_DOWN, none, a start not known to be accepted, sent just now: wait, its call may be on its way",
			rec: dtWith(withSent(UncertainStartGrace-time.Millisecond, UncertainStartGrace-time.Millisecond), func(r *Record) { r.RetryStart = true }),
			in:  dtIn(dtSBD, nil)},
		{name: "WANTS_TO_BE_UP, none, a start not known to be accepted: the platform shows it, wait",
			rec: dtWith(withSent(30*time.Second, 30*time.Second), func(r *Record) { r.RetryStart = true }), in: dtIn(dtWTBU, nil)},
		{name: "SHOULD_BE_DOWN, ours running, a start not known to be accepted: the platform shows it, wait",
			rec: dtWith(withSent(30*time.Second, 30*time.Second), func(r *Record) { r.RetryStart = true }),
			in:  dtIn(dtSBD, dtDep(paas.DeploymentWIP, dtAgo(29*time.Second)))},
		{name: "SHOULD_BE_DOWN, none, RetryStart past the fail timeout: Error",
			rec: dtWith(dtWith(rec, late), func(r *Record) { r.RetryStart = true }), in: dtIn(dtSBD, nil), want: timedOut},
		{name: "SHOULD_BE_DOWN, none, start sent 59 s ago: waits", rec: withSent(59*time.Second, 5*time.Minute), in: dtIn(dtSBD, nil)},
		{name: "SHOULD_BE_DOWN, none, start sent 60 s ago: start again, ActionAt kept",
			rec: withSent(60*time.Second, 5*time.Minute), in: dtIn(dtSBD, nil), act: ActionStart, want: resent},
		{name: "SHOULD_BE_DOWN, older OK, start sent 2 min ago: start again", rec: rec,
			in: dtIn(dtSBD, dtDep(dtOK, older)), act: ActionStart, want: resent},
		{name: "SHOULD_BE_DOWN, older FAIL, start sent 2 min ago: start again", rec: rec,
			in: dtIn(dtSBD, dtDep(dtFail, older)), act: ActionStart, want: resent},
		{name: "SHOULD_BE_DOWN, none, no start sent, action 60 s ago: start", rec: withAction(60 * time.Second),
			in: dtIn(dtSBD, nil), act: ActionStart, want: resent},
		{name: "SHOULD_BE_DOWN, none, no start sent, action 59 s ago: waits", rec: withAction(59 * time.Second), in: dtIn(dtSBD, nil)},
		{name: "SHOULD_BE_DOWN, none, start sent before this action (stale): counts from the action",
			rec: withSent(2*time.Hour, 30*time.Second), in: dtIn(dtSBD, nil)},
		{name: "SHOULD_BE_DOWN, none, at the fail timeout: Error, no start", rec: dtWith(rec, late), in: dtIn(dtSBD, nil), want: timedOut},
		{name: "SHOULD_BE_DOWN, ours WIP at the fail timeout: Error", rec: dtWith(rec, late), in: dtIn(dtSBD, dtDep(dtWIP, ours)), want: timedOut},
		{name: "SHOULD_BE_DOWN, ours FAIL past the fail timeout: the failure is the cause", rec: dtWith(rec, late),
			in: dtIn(dtSBD, dtDep(dtFail, ours)), want: failed},
	})
}

func TestDecide_ClocksOnly(t *testing.T) {
	// A decision that changes nothing still records the look, and nothing else.
	rec := dtRecord(StatusDown)
	got, act := Decide(rec, dtIn(dtSBD, nil), dtNow, dtPolicy)
	if act != ActionNone || got.LastCheckAt != dtNow || got.PlatformState != dtSBD {
		t.Fatalf("got %+v, %q", got, act)
	}
	got.LastCheckAt, got.PlatformState = rec.LastCheckAt, rec.PlatformState
	if got != rec {
		t.Fatalf("other fields changed:\n%s", dtDiff(got, rec))
	}
}

func TestReset(t *testing.T) {
	for _, s := range Statuses {
		rec := dtRecord(s)
		got := Reset(rec, dtNow)
		want := rec
		dtMove(&want, StatusWaitingForInit, "reset by an operator")
		if s == StatusWaitingForInit {
			want.LastStatusUpdate = rec.LastStatusUpdate
		}
		if d := dtDiff(got, want); d != "" {
			t.Errorf("Reset from %s (got / want):\n%s", s, d)
		}
	}
}

func TestIdleAndReapAt(t *testing.T) {
	up := dtRecord(StatusUp) // LastUpAt = now − 2 h
	cases := []struct {
		name   string
		rec    Record
		in     Input
		policy Policy
		idle   bool
		reapAt time.Time
	}{
		{"last access old", up, Input{LastAccess: dtAgo(time.Hour)}, dtPolicy, true, dtAgo(45 * time.Minute)},
		{"last access exactly a grace period ago", up, Input{LastAccess: dtAgo(15 * time.Minute)}, dtPolicy, true, dtNow},
		{"last access a second short", up, Input{LastAccess: dtAgo(15*time.Minute - time.Second)}, dtPolicy, false, dtNow.Add(time.Second)},
		{"never accessed, up for long", up, Input{}, dtPolicy, true, dtAgo(105 * time.Minute)},
		{"never accessed, just came up",
			dtWith(up, func(r *Record) { r.LastUpAt = dtAgo(time.Minute) }), Input{}, dtPolicy, false, dtNow.Add(14 * time.Minute)},
		{"old access, came up recently: counts from coming up",
			dtWith(up, func(r *Record) { r.LastUpAt = dtAgo(5 * time.Minute) }), Input{LastAccess: dtAgo(time.Hour)}, dtPolicy, false, dtNow.Add(10 * time.Minute)},
		{"access in the future (clock skew)", up, Input{LastAccess: dtNow.Add(time.Minute)}, dtPolicy, false, dtNow.Add(16 * time.Minute)},
		{"busy", up, Input{LastAccess: dtAgo(time.Hour), Busy: true}, dtPolicy, false, time.Time{}},
		{"inside a keep-up range: its end (15:00)", up, Input{LastAccess: dtAgo(time.Hour)}, dtKeepUp, false, dtNow.Add(time.Hour)},
		{"inside a keep-up range, used late: a grace period after", up, Input{LastAccess: dtNow.Add(50 * time.Minute)}, dtKeepUp, false, dtNow.Add(65 * time.Minute)},
		{"inside an always-on range: never", up, Input{LastAccess: dtAgo(time.Hour)},
			Policy{GracePeriod: 15 * time.Minute, MustBeUp: []Range{{Start: 0, End: 0, Location: time.UTC}}}, false, time.Time{}},
		{"keep-up range another day", up, Input{LastAccess: dtAgo(time.Hour)}, dtOtherDay, true, dtAgo(45 * time.Minute)},
		{"not Up: idle, no reap time", dtRecord(StatusDown), Input{LastAccess: dtAgo(time.Hour)}, dtPolicy, true, time.Time{}},
		{"waiting for shutdown: no reap time", dtRecord(StatusWaitingForShutdown), Input{}, dtPolicy, true, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Idle(c.rec, c.in, dtNow, c.policy); got != c.idle {
				t.Errorf("Idle = %v, want %v", got, c.idle)
			}
			if got := ReapAt(c.rec, c.in, c.policy, dtNow); !got.Equal(c.reapAt) {
				t.Errorf("ReapAt = %v, want %v", got, c.reapAt)
			}
		})
	}
}

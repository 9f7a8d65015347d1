package reaper

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

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

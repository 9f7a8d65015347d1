package reaper

import (
	"testing"
	"time"
)

// An operator's hold and "sleep now", and the times of a wake, as Decide sees
// them.
func TestDecide_Operator(t *testing.T) {
	up := dtRecord(StatusUp) // up for 2 h, idle for dtIn
	held := func(until time.Time) func(*Record) {
		return func(r *Record) {
			r.Hold = &KeepWarm{Until: until, Reason: "backup", By: "ops", Since: dtAgo(time.Hour)}
		}
	}
	asked := func(at time.Time, force bool) func(*Record) {
		return func(r *Record) { r.SleepAsk = &SleepAsk{At: at, By: "ops", Force: force} }
	}
	recent := func(in *Input) { in.LastAccess = dtAgo(time.Minute) }
	byOps := func(r *Record) { dtMove(r, StatusWaitingForShutdown, "put to sleep by ops"); r.ActionAt = dtNow }
	down := dtRecord(StatusDown)
	dtRun(t, []dtCase{
		{name: "a hold keeps an idle app up", rec: dtWith(up, held(dtNow.Add(time.Hour))), in: dtIn(dtSBU, nil)},
		{name: "a hold that ended less than a grace period ago keeps it up",
			rec: dtWith(up, held(dtAgo(14*time.Minute))), in: dtIn(dtSBU, nil)},
		{name: "a grace period after the hold ended, the app sleeps",
			rec: dtWith(up, held(dtAgo(15*time.Minute))), in: dtIn(dtSBU, nil), act: ActionStop,
			want: func(r *Record) { dtMove(r, StatusWaitingForShutdown, "idle for 15m0s"); r.ActionAt = dtNow }},
		{name: "a hold wakes a sleeping app", rec: dtWith(down, held(dtNow.Add(time.Hour))), in: dtIn(dtSBD, nil), act: ActionStart,
			want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseHeldAwake)
				r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtNow}
			}},
		{name: "an expired hold wakes nothing", rec: dtWith(down, held(dtAgo(time.Second))), in: dtIn(dtSBD, nil)},
		{name: "sleep now puts an app in use to sleep", rec: dtWith(up, asked(dtAgo(time.Second), false)),
			in: dtInWith(dtSBU, nil, recent), act: ActionStop, want: byOps},
		{name: "sleep now waits while a request is in flight", rec: dtWith(up, asked(dtAgo(time.Second), true)),
			in: dtInWith(dtSBU, nil, func(in *Input) { in.Busy = true })},
		{name: "sleep now, not forced, keeps to a keep-up range", rec: dtWith(up, asked(dtAgo(time.Second), false)),
			in: dtInWith(dtSBU, nil, recent), policy: &dtKeepUp},
		{name: "sleep now, forced, ignores a keep-up range", rec: dtWith(up, asked(dtAgo(time.Second), true)),
			in: dtInWith(dtSBU, nil, recent), policy: &dtKeepUp, act: ActionStop, want: byOps},
		{name: "sleep now, not forced, keeps to a hold",
			rec: dtWith(dtWith(up, asked(dtAgo(time.Second), false)), held(dtNow.Add(time.Hour))), in: dtInWith(dtSBU, nil, recent)},
		{name: "sleep now, forced, ends under a hold",
			rec: dtWith(dtWith(up, asked(dtAgo(time.Second), true)), held(dtNow.Add(time.Hour))),
			in:  dtInWith(dtSBU, nil, recent), act: ActionStop, want: byOps},
		{name: "a sleep asked before the app last came up is spent",
			rec: dtWith(up, asked(up.LastUpAt.Add(-time.Second), true)), in: dtInWith(dtSBU, nil, recent)},
		{name: "sleep now never stops what the platform must keep up", rec: dtWith(up, asked(dtAgo(time.Second), true)),
			in:   dtInWith(dtSBU, nil, func(in *Input) { recent(in); in.Observation.NotShutdownable = true }),
			want: func(r *Record) { r.Cause = CauseNotShutdownable }},
		{name: "a wake asked earlier dates the wake", rec: down,
			in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked, in.WakeAskedAt = true, dtAgo(3*time.Second) }), act: ActionStart,
			want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseWakeAsked)
				r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, true
				r.Wake = &WakeTimes{AskedAt: dtAgo(3 * time.Second)}
			}},
		{name: "up after a wake: the platform's up time is kept",
			rec: dtWith(dtRecord(StatusWaitingForUp), func(r *Record) {
				r.Wake = &WakeTimes{AskedAt: dtAgo(3 * time.Minute), AcceptedAt: dtAgo(2 * time.Minute)}
			}),
			in: dtIn(dtSBU, nil),
			want: func(r *Record) {
				dtMove(r, StatusUp, "woke up")
				r.LastUpAt = dtNow
				r.Wake = &WakeTimes{AskedAt: dtAgo(3 * time.Minute), AcceptedAt: dtAgo(2 * time.Minute), UpAt: dtNow}
			}},
	})
}

func TestReapAt_CountsFromTheEndOfAHold(t *testing.T) {
	rec := dtRecord(StatusUp)
	rec.Hold = &KeepWarm{Until: dtNow.Add(time.Hour)}
	if got, want := ReapAt(rec, dtIn(dtSBU, nil), dtPolicy, dtNow), dtNow.Add(time.Hour+15*time.Minute); !got.Equal(want) {
		t.Fatalf("ReapAt = %v, want %v (the hold's end plus the grace period)", got, want)
	}
}

func TestAfterStart_DatesTheAcceptedPhase(t *testing.T) {
	next := dtRecord(StatusWaitingForUp)
	next.Wake = &WakeTimes{AskedAt: dtAgo(time.Second)}
	got, _ := afterStart(next, nil, dtNow)
	if got.Wake.AcceptedAt != dtNow || next.Wake.AcceptedAt != (time.Time{}) {
		t.Fatalf("afterStart: Wake = %+v (given %+v); want AcceptedAt = now, on a copy", got.Wake, next.Wake)
	}
}

func TestWakeTimes_Durations(t *testing.T) {
	w := &WakeTimes{AskedAt: dtNow, AcceptedAt: dtNow.Add(100 * time.Millisecond), UpAt: dtNow.Add(2 * time.Second), FirstAnswerAt: dtNow.Add(2100 * time.Millisecond)}
	got := w.Durations()
	want := []PhaseDuration{{PhaseAccepted, 0.1}, {PhaseUp, 1.9}, {PhaseFirstAnswer, 0.1}}
	if len(got) != len(want) {
		t.Fatalf("Durations = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Phase != want[i].Phase || got[i].Seconds < want[i].Seconds-1e-9 || got[i].Seconds > want[i].Seconds+1e-9 {
			t.Errorf("Durations[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if w.Total() != 2100*time.Millisecond {
		t.Errorf("Total = %v, want 2.1s", w.Total())
	}
	if (&WakeTimes{AskedAt: dtNow}).Durations() != nil || (*WakeTimes)(nil).Total() != 0 {
		t.Error("a wake with no phase reached has no durations")
	}
}

package reaper

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

// dtExited is a start of ours (dated at) whose app ran and exited before it
// was ready.
func dtExited(at time.Time) *paas.Deployment {
	return &paas.Deployment{State: paas.DeploymentFail, Action: "DEPLOY", At: at, Cause: "exited with status 1 before it was ready", Exited: true}
}

// dtCrash is an input where the app is down, having exited by itself at.
func dtCrash(at time.Time, f ...func(*Input)) Input {
	in := dtIn(dtSBD, nil)
	in.Observation.Exit = &paas.Exit{At: at, Status: "exited with status 3"}
	for _, g := range f {
		g(&in)
	}
	return in
}

func TestBootBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		5: 16 * time.Second, 6: 30 * time.Second, 100: 30 * time.Second} {
		if got := bootBackoff(n); got != want {
			t.Errorf("bootBackoff(%d) = %s, want %s", n, got, want)
		}
	}
}

// A start of ours that ran and exited before it was ready is started again
// after a back-off, until the fail timeout or the last failed boot allowed.
func TestDecide_AStartThatExitsBeforeItIsReadyIsRetried(t *testing.T) {
	rec := dtRecord(StatusWaitingForUp) // started 2 min ago
	ours := dtAgo(time.Minute)
	counted := func(n int, retry time.Time) func(*Record) {
		return func(r *Record) {
			r.Boots = &FailedBoots{Count: n, Last: "exited with status 1 before it was ready", At: dtAgo(time.Second), Start: ours, RetryAt: retry}
		}
	}
	first := func(r *Record) {
		r.Boots = &FailedBoots{Count: 1, Last: "exited with status 1 before it was ready", At: dtNow, Start: ours, RetryAt: dtNow.Add(time.Second)}
	}
	once := &Policy{GracePeriod: 15 * time.Minute, FailTimeout: 10 * time.Minute, MaxFailedBoots: 1}
	dtRun(t, []dtCase{
		{name: "first exit: counted, a start in 1 s", rec: rec, in: dtIn(dtSBD, dtExited(ours)), want: first},
		{name: "counted, back-off running: waits", rec: dtWith(rec, counted(1, dtNow.Add(time.Millisecond))), in: dtIn(dtSBD, dtExited(ours))},
		{name: "counted, back-off over: started again", rec: dtWith(rec, counted(1, dtNow)), in: dtIn(dtSBD, dtExited(ours)),
			act: ActionStart, want: func(r *Record) { r.StartSentAt, r.RetryStart = dtNow, true }},
		{name: "counted, back-off over, the platform says starting: no start", rec: dtWith(rec, counted(1, dtAgo(time.Second))),
			in: dtIn(dtWTBU, dtExited(ours))},
		{name: "a second exit (another start): counted, 2 s", rec: dtWith(rec, func(r *Record) {
			r.Boots = &FailedBoots{Count: 1, Last: "x", At: dtAgo(30 * time.Second), Start: dtAgo(100 * time.Second), RetryAt: dtAgo(29 * time.Second)}
		}), in: dtIn(dtSBD, dtExited(ours)), want: func(r *Record) {
			r.Boots = &FailedBoots{Count: 2, Last: "exited with status 1 before it was ready", At: dtNow, Start: ours, RetryAt: dtNow.Add(2 * time.Second)}
		}},
		{name: "the fifth exit in a row: Error with the exit status", rec: dtWith(rec, func(r *Record) {
			r.Boots = &FailedBoots{Count: 4, Last: "x", At: dtAgo(30 * time.Second), Start: dtAgo(100 * time.Second)}
		}), in: dtIn(dtSBD, dtExited(ours)), want: func(r *Record) {
			r.Boots = &FailedBoots{Count: 5, Last: "exited with status 1 before it was ready", At: dtNow, Start: ours, RetryAt: dtNow.Add(16 * time.Second)}
			dtMove(r, StatusError, "5 failed boots in a row; the last one exited with status 1 before it was ready")
		}},
		{name: "max_failed_boots 1: the first exit is Error", rec: rec, in: dtIn(dtSBD, dtExited(ours)), policy: once, want: func(r *Record) {
			first(r)
			dtMove(r, StatusError, "1 failed boots in a row; the last one exited with status 1 before it was ready")
		}},
		{name: "past the fail timeout: Error with the last exit", rec: dtWith(rec, func(r *Record) { r.ActionAt = dtAgo(10 * time.Minute) }),
			in: dtIn(dtSBD, dtExited(ours)), want: func(r *Record) {
				first(r)
				dtMove(r, StatusError, CauseStartTimeout+"; its last start exited with status 1 before it was ready")
			}},
		{name: "a failed start that never ran is final", rec: rec, in: dtIn(dtSBD, dtDep(dtFail, ours)),
			want: func(r *Record) { dtMove(r, StatusError, "the start failed: exit code 1") }},
		{name: "an older exit is not ours: the start is sent again as usual", rec: dtWith(rec, func(r *Record) { r.RetryStart = true }),
			in: dtIn(dtSBD, dtExited(dtAgo(time.Hour))), act: ActionStart, want: func(r *Record) { r.StartSentAt = dtNow }},
	})
}

// An app that goes down by itself within CrashWindow of coming up failed its
// boot: it is Down, and a wake waits for the back-off; the fifth in a row is
// Error. One that ran longer, or was stopped from outside, is not counted.
func TestDecide_ACrashLoopBacksOffThenGoesToError(t *testing.T) {
	up := dtWith(dtRecord(StatusUp), func(r *Record) { r.LastUpAt = dtAgo(10 * time.Second) })
	crashed := func(n int, retry time.Duration) func(*Record) {
		return func(r *Record) {
			r.Boots = &FailedBoots{Count: n, Last: "exited with status 3 5s after it came up", At: dtNow, Start: r.LastUpAt, RetryAt: dtNow.Add(retry)}
			dtMove(r, StatusDown, "crashed: exited with status 3 5s after it came up")
			r.LastDownAt = dtNow
		}
	}
	asked := func(in *Input) { in.WakeAsked = true }
	down := dtWith(dtRecord(StatusDown), func(r *Record) {
		r.Boots = &FailedBoots{Count: 2, Last: "x", At: dtAgo(time.Second), Start: dtAgo(time.Minute), RetryAt: dtNow.Add(time.Second)}
	})
	dtRun(t, []dtCase{
		{name: "Up, crashed 5 s after it came up: Down, counted", rec: up, in: dtCrash(dtAgo(5 * time.Second)), want: crashed(1, time.Second)},
		{name: "Up, third crash: Down, 4 s back-off", rec: dtWith(up, func(r *Record) {
			r.Boots = &FailedBoots{Count: 2, Start: dtAgo(time.Minute)}
		}), in: dtCrash(dtAgo(5 * time.Second)), want: crashed(3, 4*time.Second)},
		{name: "Up, fifth crash: Error with the exit status", rec: dtWith(up, func(r *Record) {
			r.Boots = &FailedBoots{Count: 4, Start: dtAgo(time.Minute)}
		}), in: dtCrash(dtAgo(5 * time.Second)), want: func(r *Record) {
			r.Boots = &FailedBoots{Count: 5, Last: "exited with status 3 5s after it came up", At: dtNow, Start: r.LastUpAt, RetryAt: dtNow.Add(16 * time.Second)}
			dtMove(r, StatusError, "5 failed boots in a row; the last one exited with status 3 5s after it came up")
		}},
		{name: "Up, crashed after a good run: stopped from outside, not counted", rec: dtRecord(StatusUp), in: dtCrash(dtAgo(time.Minute)),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped from outside"); r.LastDownAt = dtNow }},
		{name: "Up, an exit from an earlier run: stopped from outside", rec: up, in: dtCrash(dtAgo(time.Minute)),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped from outside"); r.LastDownAt = dtNow }},
		{name: "Up, stopped from outside (no exit): not counted", rec: up, in: dtIn(dtSBD, nil),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped from outside"); r.LastDownAt = dtNow }},
		{name: "Up a minute with failed boots: they are forgotten", rec: dtWith(dtRecord(StatusUp), func(r *Record) {
			r.LastUpAt = dtAgo(CrashWindow)
			r.Boots = &FailedBoots{Count: 3}
		}), in: dtInWith(dtSBU, nil, func(in *Input) { in.LastAccess = dtNow }), want: func(r *Record) { r.Boots = nil }},
		{name: "Down, asked, back-off running: no start yet", rec: down, in: dtInWith(dtSBD, nil, asked)},
		{name: "Down, asked, back-off over: started", rec: dtWith(down, func(r *Record) { b := *r.Boots; b.RetryAt = dtNow; r.Boots = &b }),
			in: dtInWith(dtSBD, nil, asked), act: ActionStart, want: func(r *Record) {
				dtMove(r, StatusWaitingForUp, CauseWakeAsked)
				r.Wake = &WakeTimes{AskedAt: dtNow}
				r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, true
			}},
		{name: "WaitingForUp, ours OK but down again: crashed, counted", rec: dtRecord(StatusWaitingForUp),
			in: dtCrash(dtAgo(55*time.Second), func(in *Input) { in.Observation.Deployment = dtDep(dtOK, dtAgo(time.Minute)) }),
			want: func(r *Record) {
				r.Boots = &FailedBoots{Count: 1, Last: "exited with status 3 5s after it came up", At: dtNow, Start: dtAgo(time.Minute), RetryAt: dtNow.Add(time.Second)}
				dtMove(r, StatusDown, "crashed: exited with status 3 5s after it came up")
				r.LastDownAt = dtNow
			}},
	})
}

func TestReset_ForgetsFailedBoots(t *testing.T) {
	r := Reset(dtWith(dtRecord(StatusError), func(r *Record) { r.Boots = &FailedBoots{Count: 5} }), dtNow)
	if r.Boots != nil || r.Status != StatusWaitingForInit {
		t.Errorf("after a reset: %s with boots %+v, want WaitingForInit and none", r.Status, r.Boots)
	}
}

// An operator's forced sleep stops an app in Error (once nothing is in
// flight) or stuck waking (at once: its held requests do not use it).
func TestDecide_AForcedSleepStopsAnAppInErrorOrStuckWaking(t *testing.T) {
	forced := func(from Status, at time.Time) func(*Record) {
		return func(r *Record) { r.SleepAsk = &SleepAsk{At: at, By: "bob", Force: true, From: from} }
	}
	inError := dtWith(dtRecord(StatusError), forced(StatusError, dtAgo(time.Second)))
	waking := dtWith(dtRecord(StatusWaitingForUp), forced(StatusWaitingForUp, dtAgo(time.Second)))
	busy := func(in *Input) { in.Busy = true }
	stopping := func(from string) func(*Record) {
		return func(r *Record) {
			dtMove(r, StatusWaitingForShutdown, "put to sleep by bob (forced, from "+from+")")
			r.ActionAt, r.RetryStart = dtNow, false
		}
	}
	sent := dtWith(dtRecord(StatusWaitingForShutdown), func(r *Record) {
		forced(StatusWaitingForUp, dtAgo(time.Minute))(r)
		r.StopSentAt = dtAgo(time.Second)
	})
	dtRun(t, []dtCase{
		{name: "Error: stopped", rec: inError, in: dtIn(dtSBU, nil), act: ActionStop, want: stopping("Error")},
		{name: "Error, platform already down: a stop all the same", rec: inError, in: dtIn(dtSBD, nil), act: ActionStop, want: stopping("Error")},
		{name: "Error, requests in flight: waits for them", rec: inError, in: dtInWith(dtSBU, nil, busy)},
		{name: "Error, an ask from before it went to Error: hands off", rec: dtWith(dtRecord(StatusError), forced(StatusError, dtAgo(2*time.Hour))),
			in: dtIn(dtSBU, nil)},
		{name: "Error, an unforced ask: hands off", rec: dtWith(inError, func(r *Record) { a := *r.SleepAsk; a.Force = false; r.SleepAsk = &a }),
			in: dtIn(dtSBU, nil)},
		{name: "waking, requests held: stopped at once", rec: waking, in: dtInWith(dtWTBU, dtDep(dtWIP, dtAgo(time.Minute)), busy),
			act: ActionStop, want: stopping("WaitingForUp")},
		{name: "stop sent, the platform still says starting: waits", rec: sent, in: dtIn(dtWTBU, nil)},
		{name: "stop sent, the platform says down: Down", rec: sent, in: dtIn(dtSBD, nil),
			want: func(r *Record) { dtMove(r, StatusDown, "stopped"); r.LastDownAt = dtNow }},
		{name: "stop never sent: sent", rec: dtWith(sent, func(r *Record) { r.StopSentAt = time.Time{} }), in: dtIn(dtWTBU, nil), act: ActionStop},
		// Stopped while waking: a platform that lags may still begin the start it
		// had accepted, so a wake waits RestartAfter from the stop.
		{name: "stopped while waking, asked 59 s after: no start yet", rec: dtWith(dtRecord(StatusDown), func(r *Record) {
			forced(StatusWaitingForUp, dtAgo(time.Minute))(r)
			r.StopSentAt = dtAgo(RestartAfter - time.Second)
		}), in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked = true })},
		{name: "stopped while waking, asked a minute after: started", rec: dtWith(dtRecord(StatusDown), func(r *Record) {
			forced(StatusWaitingForUp, dtAgo(2*time.Minute))(r)
			r.StopSentAt = dtAgo(RestartAfter)
		}), in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked = true }), act: ActionStart, want: func(r *Record) {
			dtMove(r, StatusWaitingForUp, CauseWakeAsked)
			r.Wake = &WakeTimes{AskedAt: dtNow}
			r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, true
		}},
		{name: "stopped from Error: started at once", rec: dtWith(dtRecord(StatusDown), func(r *Record) {
			forced(StatusError, dtAgo(time.Minute))(r)
			r.StopSentAt = dtAgo(time.Second)
		}), in: dtInWith(dtSBD, nil, func(in *Input) { in.WakeAsked = true }), act: ActionStart, want: func(r *Record) {
			dtMove(r, StatusWaitingForUp, CauseWakeAsked)
			r.Wake = &WakeTimes{AskedAt: dtNow}
			r.ActionAt, r.StartSentAt, r.RetryStart = dtNow, dtNow, true
		}},
	})
}

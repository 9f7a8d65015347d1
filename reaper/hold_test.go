package reaper

import (
	"testing"
	"time"
)

func TestHoldOutcome(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	upSeen := now.Add(-2 * time.Second).UnixNano()
	later, earlier := now.Add(time.Minute), now.Add(-time.Millisecond)
	rec := func(s Status) *Record { return &Record{Status: s} }
	for _, tc := range []struct {
		name       string
		rec        *Record
		readyDelay time.Duration
		deadline   time.Time
		want       holdResult
		ends       bool
	}{
		{"never observed: wait", nil, 0, later, 0, false},
		{"asleep: wait", rec(StatusDown), 0, later, 0, false},
		{"waking: wait", rec(StatusWaitingForUp), 0, later, 0, false},
		{"up, no ready delay: released", rec(StatusUp), 0, later, holdReleased, true},
		{"up, ready delay passed: released", rec(StatusUp), 2 * time.Second, later, holdReleased, true},
		{"up, ready delay not passed: wait", rec(StatusUp), 3 * time.Second, later, 0, false},
		{"up past the deadline: released all the same", rec(StatusUp), 0, earlier, holdReleased, true},
		{"error before the deadline: failed", rec(StatusError), 0, later, holdFailed, true},
		{"error at the deadline: timed out", rec(StatusError), 0, now, holdTimedOut, true},
		{"error past the deadline: timed out", rec(StatusError), 0, earlier, holdTimedOut, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ends := holdOutcome(tc.rec, upSeen, tc.readyDelay, tc.deadline, now)
			if got != tc.want || ends != tc.ends {
				t.Errorf("holdOutcome = %v, %v; want %v, %v", got, ends, tc.want, tc.ends)
			}
		})
	}
}

package reaper

import (
	"testing"
	"time"
)

func TestHoldOutcome(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	upSeen := now.Add(-2 * time.Second).UnixNano()
	rec := func(s Status) *Record { return &Record{Status: s} }
	for _, tc := range []struct {
		name       string
		rec        *Record
		readyDelay time.Duration
		want       holdResult
		ends       bool
	}{
		{"never observed: wait", nil, 0, 0, false},
		{"asleep: wait", rec(StatusDown), 0, 0, false},
		{"waking: wait", rec(StatusWaitingForUp), 0, 0, false},
		{"up, no ready delay: released", rec(StatusUp), 0, holdReleased, true},
		{"up, ready delay passed: released", rec(StatusUp), 2 * time.Second, holdReleased, true},
		{"up, ready delay not passed: wait", rec(StatusUp), 3 * time.Second, 0, false},
		{"error: failed", rec(StatusError), 0, holdFailed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ends := holdOutcome(tc.rec, upSeen, tc.readyDelay, now)
			if got != tc.want || ends != tc.ends {
				t.Errorf("holdOutcome = %v, %v; want %v, %v", got, ends, tc.want, tc.ends)
			}
		})
	}
}

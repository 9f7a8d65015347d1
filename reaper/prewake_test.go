package reaper

import (
	"testing"
	"time"
)

// mondays returns arrivals at hh:mm (+ jitter minutes, in order) on the weeks
// before now, on the given weekday, in loc.
func weekly(now time.Time, loc *time.Location, day time.Weekday, hh, mm int, jitter ...int) []time.Time {
	var out []time.Time
	l := now.In(loc)
	d := time.Date(l.Year(), l.Month(), l.Day(), hh, mm, 0, 0, loc)
	for d.Weekday() != day || !d.Before(now) {
		d = d.AddDate(0, 0, -1)
	}
	for _, j := range jitter {
		out = append(out, d.Add(time.Duration(j)*time.Minute))
		d = d.AddDate(0, 0, -7)
	}
	return out
}

func TestPredictArrivals(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, paris) // a Tuesday evening
	cat := func(ts ...[]time.Time) (out []time.Time) {
		for _, t := range ts {
			out = append(out, t...)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		arrivals []time.Time
		want     []PrewakeSlot
	}{
		{"nothing", nil, nil},
		{"Mondays at 09:05 for four weeks, a little jitter",
			weekly(now, paris, time.Monday, 9, 5, 0, 3, -2, 7),
			[]PrewakeSlot{{time.Monday, 9*60 + 3, 4}}},
		{"twice is not a habit", weekly(now, paris, time.Monday, 9, 5, 0, 0), nil},
		{"two habits on one day", cat(weekly(now, paris, time.Monday, 9, 5, 0, 1, 2), weekly(now, paris, time.Monday, 14, 0, 0, 1, 2)),
			[]PrewakeSlot{{time.Monday, 9*60 + 5, 3}, {time.Monday, 14 * 60, 3}}},
		{"far apart times are not one slot", cat(weekly(now, paris, time.Friday, 8, 0, 0), weekly(now, paris, time.Friday, 11, 0, 0, 0)), nil},
		{"older than the lookback do not count", weekly(now, paris, time.Wednesday, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0)[6:], nil},
		{"several a day on one date count once", append(weekly(now, paris, time.Thursday, 9, 0, 0, 0), weekly(now, paris, time.Thursday, 9, 10, 0)...), nil},
	} {
		got := PredictArrivals(c.arrivals, now, paris)
		if len(got) != len(c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: slot %d = %+v, want %+v", c.name, i, got[i], c.want[i])
			}
		}
	}
}

func TestPrewakeDue(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	slots := []PrewakeSlot{{time.Monday, 9*60 + 5, 4}}
	monday := func(hh, mm int) time.Time { return time.Date(2026, 11, 30, hh, mm, 0, 0, paris) }
	for _, c := range []struct {
		now  time.Time
		boot time.Duration
		due  bool
	}{
		{monday(8, 0), 2 * time.Minute, false},
		{monday(9, 1), 2 * time.Minute, false}, // 4 min before: boot 2 + margin 1 = 3
		{monday(9, 2), 2 * time.Minute, true},
		{monday(9, 4), 0, true}, // unknown boot: a minute, plus the margin
		{monday(9, 3), 0, true},
		{monday(9, 2), 0, false},
		{monday(9, 5), 2 * time.Minute, false}, // the arrival is past: next Monday's is far
	} {
		arrival, due := PrewakeDue(slots, c.boot, c.now, paris)
		if due != c.due {
			t.Errorf("at %s (boot %v): due %v (next arrival %s), want %v", c.now.Format("Mon 15:04"), c.boot, due, arrival.Format("Mon 02 15:04"), c.due)
		}
	}
	if at, ok := NextArrival(slots, monday(9, 5), paris); !ok || !at.Equal(monday(9, 5).AddDate(0, 0, 7)) {
		t.Errorf("next arrival after Monday 09:05: %v, want the next Monday's", at)
	}
	if _, ok := NextArrival(nil, monday(9, 5), paris); ok {
		t.Error("no slot, yet an arrival")
	}
	// Across a change of daylight saving time the slot stays on the clocks' 09:05.
	if at, _ := NextArrival(slots, time.Date(2026, 3, 28, 12, 0, 0, 0, paris), paris); at.Hour() != 9 || at.Minute() != 5 {
		t.Errorf("after the spring change: %v, want 09:05 on the clocks", at)
	}
}

// A team that comes every working day is learned within a week, for every
// working day; a weekday habit stays on its weekday.
func TestPredictArrivals_EveryWorkingDay(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC) // a Saturday
	var arrivals []time.Time
	for d := 1; d <= 4; d++ { // Tuesday 1st to Friday 4th
		arrivals = append(arrivals, time.Date(2026, 12, d, 9, d, 0, 0, time.UTC))
	}
	got := PredictArrivals(arrivals, now, time.UTC)
	if len(got) != 5 {
		t.Fatalf("slots %+v; want one on each working day", got)
	}
	for i, s := range got {
		if s.Weekday != time.Monday+time.Weekday(i) || s.At() != "09:01" || s.Weeks != 4 {
			t.Errorf("slot %d = %+v (%s); want %s at 09:01, on 4 dates", i, s, s.At(), time.Monday+time.Weekday(i))
		}
	}
}

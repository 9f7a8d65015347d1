package reaper

import (
	"slices"
	"time"
)

// Learned pre-wake (a route's `prewake: learn`): from an app's arrivals — the
// first request after a sleep, or after a pre-wake — find the visits that
// recur on a weekday at about the same time (the team that opens the staging
// app at 09:05 every weekday), and start the app one learned boot time before
// the next one. A pre-wake nobody visits costs one grace period: the app was
// up since the pre-wake, and sleeps as any idle app.

// Tuning of the prediction.
const (
	// prewakeLookback is how far back arrivals count.
	prewakeLookback = 6 * 7 * 24 * time.Hour
	// prewakeMinWeeks is on how many distinct weeks a weekday's slot must have
	// been seen; prewakeMinWorkdays on how many working days (Monday to Friday
	// together) a slot of every working day.
	prewakeMinWeeks    = 3
	prewakeMinWorkdays = 4
	// prewakeSpread is how close arrivals must be to count as one slot.
	prewakeSpread = 30 * time.Minute
	// prewakeMargin is started on top of the boot time, so that the app is up
	// (and ready) when the visitor comes.
	prewakeMargin = time.Minute
	// prewakeSlotsMax bounds the slots of one weekday.
	prewakeSlotsMax = 4
	// prewakeDefaultBoot is the boot time assumed before any was measured.
	prewakeDefaultBoot = time.Minute
)

// PrewakeLearn is the route setting that turns learned pre-wake on.
const PrewakeLearn = "learn"

// CausePrewake is the cause of a start the prediction made.
const CausePrewake = "woken: a visit is expected (learned pre-wake)"

// The history entries of pre-wake (Transition.Kind).
const (
	EventArrival = "arrival" // the first request after a sleep or a pre-wake
	EventPrewake = "prewake" // a pre-wake's outcome: Cause "hit" or "miss"
)

// PrewakeSlot is a recurring visit: on Weekday, at Minute past midnight (in the
// app's time zone), seen on Weeks distinct dates of the lookback.
type PrewakeSlot struct {
	Weekday time.Weekday `json:"weekday"`
	Minute  int          `json:"minute"`
	Weeks   int          `json:"weeks"`
}

// At is the slot's time of day, "09:05".
func (s PrewakeSlot) At() string {
	return time.Date(2000, 1, 1, s.Minute/60, s.Minute%60, 0, 0, time.UTC).Format("15:04")
}

// PredictArrivals finds the recurring visits in arrivals (pure), in two ways:
// per weekday (arrivals on that weekday, seen on at least prewakeMinWeeks
// dates), and over the working days (Monday to Friday together, seen on at
// least prewakeMinWorkdays dates: a team that comes every morning is learned in
// a week). Arrivals are grouped when each is within prewakeSpread of the
// previous one by time of day; a group is a slot at the 20th percentile of its
// dates' first arrival, so that most visits find the app up.
func PredictArrivals(arrivals []time.Time, now time.Time, loc *time.Location) []PrewakeSlot {
	byDay := map[time.Weekday][]dayArrival{}
	var workdays []dayArrival
	for _, a := range arrivals {
		if a.After(now) || now.Sub(a) > prewakeLookback {
			continue
		}
		l := a.In(loc)
		da := dayArrival{l.Hour()*60 + l.Minute(), l.Format("2006-01-02"), l.Weekday()}
		byDay[l.Weekday()] = append(byDay[l.Weekday()], da)
		if wd := l.Weekday(); wd != time.Saturday && wd != time.Sunday {
			workdays = append(workdays, da)
		}
	}
	every := groupArrivals(workdays, prewakeMinWorkdays, 3)
	var out []PrewakeSlot
	for day := time.Sunday; day <= time.Saturday; day++ {
		slots := groupArrivals(byDay[day], prewakeMinWeeks, 1)
		if day != time.Saturday && day != time.Sunday {
			slots = mergeSlots(slots, every)
		}
		for i := range slots {
			slots[i].Weekday = day
		}
		out = append(out, slots...)
	}
	return out
}

// dayArrival is an arrival by its time of day and its date.
type dayArrival struct {
	minute  int
	date    string
	weekday time.Weekday
}

// groupArrivals finds the slots of some arrivals (their Weekday left unset):
// groups seen on at least minDates dates falling on at least minWeekdays
// weekdays (a Monday habit is not one of every working day), best supported
// first if more than prewakeSlotsMax, returned in the order of the day.
func groupArrivals(as []dayArrival, minDates, minWeekdays int) []PrewakeSlot {
	slices.SortFunc(as, func(a, b dayArrival) int { return a.minute - b.minute })
	var slots []PrewakeSlot
	for i := 0; i < len(as); {
		j := i + 1
		for j < len(as) && as[j].minute-as[j-1].minute <= int(prewakeSpread/time.Minute) {
			j++
		}
		first := map[string]int{} // date → its first arrival in the group
		weekdays := map[time.Weekday]bool{}
		for _, a := range as[i:j] {
			if m, ok := first[a.date]; !ok || a.minute < m {
				first[a.date] = a.minute
			}
			weekdays[a.weekday] = true
		}
		if len(first) >= minDates && len(weekdays) >= minWeekdays {
			mins := make([]int, 0, len(first))
			for _, m := range first {
				mins = append(mins, m)
			}
			slices.Sort(mins)
			slots = append(slots, PrewakeSlot{Minute: mins[len(mins)/5], Weeks: len(first)})
		}
		i = j
	}
	if len(slots) > prewakeSlotsMax {
		slices.SortStableFunc(slots, func(a, b PrewakeSlot) int { return b.Weeks - a.Weeks })
		slots = slots[:prewakeSlotsMax]
	}
	slices.SortFunc(slots, func(a, b PrewakeSlot) int { return a.Minute - b.Minute })
	return slots
}

// mergeSlots adds the working days' slots to a weekday's, keeping the earlier
// of two within prewakeSpread of each other.
func mergeSlots(day, every []PrewakeSlot) []PrewakeSlot {
	out := slices.Clone(day)
	for _, e := range every {
		near := slices.IndexFunc(out, func(s PrewakeSlot) bool {
			return abs(s.Minute-e.Minute) <= int(prewakeSpread/time.Minute)
		})
		switch {
		case near < 0:
			out = append(out, e)
		case e.Minute < out[near].Minute:
			out[near] = e
		}
	}
	slices.SortFunc(out, func(a, b PrewakeSlot) int { return a.Minute - b.Minute })
	if len(out) > prewakeSlotsMax {
		out = out[:prewakeSlotsMax]
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// NextArrival is the first predicted arrival after from (pure), within a week.
func NextArrival(slots []PrewakeSlot, from time.Time, loc *time.Location) (time.Time, bool) {
	l := from.In(loc)
	midnight := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
	for d := range 8 {
		day := midnight.AddDate(0, 0, d)
		for _, s := range slots {
			if s.Weekday != day.Weekday() {
				continue
			}
			at := time.Date(day.Year(), day.Month(), day.Day(), s.Minute/60, s.Minute%60, 0, 0, loc)
			if at.After(from) {
				return at, true
			}
		}
	}
	return time.Time{}, false
}

// PrewakeDue says whether the app should be started now for a predicted visit
// (pure): now is within boot + prewakeMargin before the next arrival. boot is
// the app's learned boot time, 0 when unknown (prewakeDefaultBoot then).
func PrewakeDue(slots []PrewakeSlot, boot time.Duration, now time.Time, loc *time.Location) (arrival time.Time, due bool) {
	if boot <= 0 {
		boot = prewakeDefaultBoot
	}
	arrival, ok := NextArrival(slots, now, loc)
	if !ok {
		return time.Time{}, false
	}
	return arrival, !now.Before(arrival.Add(-boot - prewakeMargin))
}

package reaper

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	// The keep-up ranges name IANA time zones (Europe/Paris by default). Embedding
	// the database keeps them working in a container image that has no
	// /usr/share/zoneinfo, instead of failing at config load.
	_ "time/tzdata"
)

// DefaultTimezone is the time zone of a keep-up range whose config names none, as
// in the reference's `timezone` key.
const DefaultTimezone = "Europe/Paris"

const minutesPerDay = 24 * 60

// Range is one keep-up window (`must_be_up_at`): while it contains the time, the
// app is never put to sleep, and a sleeping app is woken.
//
// A range is wall-clock time in its Location: "08:00" means eight on the clocks of
// that zone, whatever the UTC offset that day. On the night clocks go forward the
// skipped hour belongs to no range; on the night they go back the repeated hour is
// inside a range that covers it both times.
type Range struct {
	// Days says on which days the range starts, indexed by time.Weekday. All false
	// means every day.
	Days [7]bool
	// Start and End are minutes since midnight: Start is included, End excluded.
	// End may be 1440 (24:00, the end of the day). End < Start is an overnight
	// range: the part after midnight belongs to the day the range started, so
	// {Days: Friday, 22:00–02:00} contains Saturday 01:00 and not Friday 01:00.
	// End == Start is a range of 24 hours that starts at Start (00:00–00:00 is the
	// whole day), by the same rule.
	Start, End int
	// Location is the time zone of Start and End; nil means DefaultTimezone.
	Location *time.Location
}

// Contains reports whether t falls inside the range. It is pure and cheap; seconds
// are ignored (a range that starts at 08:00 contains 08:00:00, not 07:59:59).
func (r Range) Contains(t time.Time) bool {
	loc := r.Location
	if loc == nil {
		loc = defaultLocation()
	}
	lt := t.In(loc)
	m := lt.Hour()*60 + lt.Minute()
	day := lt.Weekday()
	if r.Start < r.End {
		return r.on(day) && m >= r.Start && m < r.End
	}
	// End <= Start: the range wraps past midnight. Before End, we are in the tail
	// of a range that started the day before.
	if m >= r.Start {
		return r.on(day)
	}
	if m < r.End {
		return r.on((day + 6) % 7)
	}
	return false
}

func (r Range) on(d time.Weekday) bool {
	return r.Days == [7]bool{} || r.Days[d]
}

// KeepUp reports whether now falls inside one of the policy's keep-up ranges.
func (p Policy) KeepUp(now time.Time) bool {
	for _, r := range p.MustBeUp {
		if r.Contains(now) {
			return true
		}
	}
	return false
}

// KeepUpUntil is when the keep-up ranges that contain now stop keeping the app
// up: the first minute from now that no range contains (now itself when none
// does). ok is false when they keep it up for more than a week: always.
func (p Policy) KeepUpUntil(now time.Time) (time.Time, bool) {
	t := now
	if p.KeepUp(t) {
		t = t.Truncate(time.Minute)
	}
	for limit := now.Add(8 * 24 * time.Hour); t.Before(limit); t = t.Add(time.Minute) {
		if !p.KeepUp(t) {
			return t, true
		}
	}
	return time.Time{}, false
}

// ErrBadRange is wrapped by every error of ParseRange.
var ErrBadRange = errors.New("reaper: bad keep-up range")

// RangeError says which value of a keep-up range is wrong and why. Its message
// names the value and the reason only (`"25:00" is not a time of day (HH:mm)`), so
// a config loader can put the field's path in front of it.
type RangeError struct {
	// Field is "days", "start", "end" or "timezone".
	Field string
	// Index is the entry's index in days (for Field "days").
	Index int
	// Value is the value as written.
	Value string
	// Reason completes the sentence that starts with the quoted value.
	Reason string
}

func (e *RangeError) Error() string { return strconv.Quote(e.Value) + " " + e.Reason }

// Unwrap makes errors.Is(err, ErrBadRange) true.
func (e *RangeError) Unwrap() error { return ErrBadRange }

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "sunday": time.Sunday,
	"mon": time.Monday, "monday": time.Monday,
	"tue": time.Tuesday, "tuesday": time.Tuesday,
	"wed": time.Wednesday, "wednesday": time.Wednesday,
	"thu": time.Thursday, "thursday": time.Thursday,
	"fri": time.Friday, "friday": time.Friday,
	"sat": time.Saturday, "saturday": time.Saturday,
}

// Defaults of a keep-up range that gives no time, as in the reference: the
// working day.
const (
	DefaultRangeStart = "08:00"
	DefaultRangeEnd   = "19:00"
)

// ParseRange builds a Range from the reference's `must_be_up_at` entry and the
// route's `timezone`.
//
// days holds day names, short (mon … sun) or full (monday … sunday), in any case;
// an empty list, or an entry "*", "all", "every_day", "everyday" or "" means
// every day. start and end are HH:mm (H:mm is accepted too); end may be 24:00;
// both empty mean 08:00 to 19:00, as in the reference. timezone is an IANA name;
// empty means DefaultTimezone. "Local" is refused: the machine's zone would make
// nodes of one cluster disagree.
//
// The error is a *RangeError wrapping ErrBadRange, for the first wrong value;
// ParseRangeAll gives them all.
func ParseRange(days []string, start, end, timezone string) (Range, error) {
	r, errs := ParseRangeAll(days, start, end, timezone)
	if len(errs) > 0 {
		return Range{}, errs[0]
	}
	return r, nil
}

// ParseRangeAll is ParseRange reporting every wrong value, in field order
// (days, start, end, timezone). The Range is meaningful only without errors.
func ParseRangeAll(days []string, start, end, timezone string) (Range, []*RangeError) {
	var r Range
	var errs []*RangeError
	every := len(days) == 0
	for i, d := range days {
		name := strings.ToLower(strings.TrimSpace(d))
		switch name {
		case "", "*", "all", "every_day", "everyday":
			every = true
			continue
		}
		wd, ok := weekdays[name]
		if !ok {
			errs = append(errs, &RangeError{Field: "days", Index: i, Value: d, Reason: "is not a day of the week (mon, tue, wed, thu, fri, sat, sun, or * for every day)"})
			continue
		}
		r.Days[wd] = true
	}
	if every {
		r.Days = [7]bool{}
	}
	if strings.TrimSpace(start) == "" && strings.TrimSpace(end) == "" {
		start, end = DefaultRangeStart, DefaultRangeEnd
	}
	var err *RangeError
	if r.Start, err = parseClock("start", start, false); err != nil {
		errs = append(errs, err)
	}
	if r.End, err = parseClock("end", end, true); err != nil {
		errs = append(errs, err)
	}
	if r.Location, err = parseZone(timezone); err != nil {
		errs = append(errs, err)
	}
	return r, errs
}

// parseZone reads a range's time zone: empty is DefaultTimezone.
func parseZone(timezone string) (*time.Location, *RangeError) {
	tz := strings.TrimSpace(timezone)
	switch tz {
	case "":
		return defaultLocation(), nil
	case "Local":
		return nil, &RangeError{Field: "timezone", Value: timezone, Reason: "is not allowed: name the zone (IANA name such as Europe/Paris)"}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, &RangeError{Field: "timezone", Value: timezone, Reason: "is not a time zone (IANA name such as Europe/Paris)"}
	}
	return loc, nil
}

// parseClock reads HH:mm (or H:mm) into minutes since midnight. 24:00 is the end
// of the day, allowed only where end allows it.
func parseClock(field, s string, end bool) (int, *RangeError) {
	bad := &RangeError{Field: field, Value: s, Reason: "is not a time of day (HH:mm)"}
	t := strings.TrimSpace(s)
	h, m, ok := strings.Cut(t, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 || !digits(h) || !digits(m) {
		return 0, bad
	}
	hour, _ := strconv.Atoi(h)
	minute, _ := strconv.Atoi(m)
	switch {
	case hour == 24 && minute == 0 && end:
		return minutesPerDay, nil
	case hour > 23 || minute > 59:
		return 0, bad
	}
	return hour*60 + minute, nil
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// defaultLocation is DefaultTimezone, loaded once. The database is embedded, so
// the UTC fallback only guards against a broken build.
var defaultLocation = sync.OnceValue(func() *time.Location {
	loc, err := time.LoadLocation(DefaultTimezone)
	if err != nil {
		return time.UTC
	}
	return loc
})

package reaper

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

func stLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func stRange(t *testing.T, days []string, start, end, tz string) Range {
	t.Helper()
	r, err := ParseRange(days, start, end, tz)
	if err != nil {
		t.Fatalf("ParseRange(%q, %q, %q, %q): %v", days, start, end, tz, err)
	}
	return r
}

func TestRange_Contains(t *testing.T) {
	paris := stLoad(t, "Europe/Paris")
	at := func(s string) time.Time { // wall clock in Paris
		t.Helper()
		v, err := time.ParseInLocation("2006-01-02 15:04:05", s, paris)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// 2025-03-10 is a Monday; 2025-03-14 a Friday.
	weekdays := stRange(t, []string{"mon", "tue", "wed", "thu", "fri"}, "08:00", "18:00", "")
	everyDay := stRange(t, nil, "08:00", "18:00", "Europe/Paris")
	fridayNight := stRange(t, []string{"fri"}, "22:00", "02:00", "")
	everyNight := stRange(t, []string{"*"}, "22:00", "02:00", "")
	mondayAllDay := stRange(t, []string{"mon"}, "00:00", "00:00", "")
	monday24h := stRange(t, []string{"mon"}, "08:00", "08:00", "")
	mondayEvening := stRange(t, []string{"mon"}, "20:00", "24:00", "")
	twoToThree := stRange(t, nil, "02:00", "03:00", "")
	oneToFour := stRange(t, nil, "01:00", "04:00", "")
	saturdayNight := stRange(t, []string{"sat"}, "22:00", "06:00", "")
	newYork := stRange(t, nil, "09:00", "17:00", "America/New_York")
	kolkata := stRange(t, nil, "09:00", "09:30", "Asia/Kolkata")
	noLocation := Range{Start: 8 * 60, End: 9 * 60} // nil Location: Europe/Paris

	cases := []struct {
		name string
		r    Range
		t    time.Time
		want bool
	}{
		{"weekday, at the start: included", weekdays, at("2025-03-12 08:00:00"), true},
		{"weekday, a second before the start", weekdays, at("2025-03-12 07:59:59"), false},
		{"weekday, last minute", weekdays, at("2025-03-12 17:59:59"), true},
		{"weekday, at the end: excluded", weekdays, at("2025-03-12 18:00:00"), false},
		{"saturday is not a weekday", weekdays, at("2025-03-15 10:00:00"), false},
		{"sunday is not a weekday", weekdays, at("2025-03-16 10:00:00"), false},
		{"every day includes sunday", everyDay, at("2025-03-16 10:00:00"), true},
		{"every day, outside the hours", everyDay, at("2025-03-16 19:00:00"), false},
		{"overnight, friday at the start", fridayNight, at("2025-03-14 22:00:00"), true},
		{"overnight, friday before midnight", fridayNight, at("2025-03-14 23:59:00"), true},
		{"overnight, saturday after midnight belongs to friday", fridayNight, at("2025-03-15 01:59:00"), true},
		{"overnight, saturday at the end", fridayNight, at("2025-03-15 02:00:00"), false},
		{"overnight, friday early morning belongs to thursday", fridayNight, at("2025-03-14 01:00:00"), false},
		{"overnight, saturday evening not selected", fridayNight, at("2025-03-15 22:30:00"), false},
		{"overnight, thursday evening not selected", fridayNight, at("2025-03-13 23:00:00"), false},
		{"overnight, friday midday", fridayNight, at("2025-03-14 12:00:00"), false},
		{"overnight every day, after midnight", everyNight, at("2025-03-11 00:30:00"), true},
		{"overnight every day, afternoon", everyNight, at("2025-03-11 15:00:00"), false},
		{"00:00–00:00 is the whole monday: midnight", mondayAllDay, at("2025-03-10 00:00:00"), true},
		{"00:00–00:00 is the whole monday: last minute", mondayAllDay, at("2025-03-10 23:59:59"), true},
		{"00:00–00:00 monday: tuesday midnight", mondayAllDay, at("2025-03-11 00:00:00"), false},
		{"00:00–00:00 monday: sunday night", mondayAllDay, at("2025-03-09 23:59:00"), false},
		{"08:00–08:00 is 24 h from monday 08:00", monday24h, at("2025-03-10 08:00:00"), true},
		{"08:00–08:00 monday: tuesday 07:59", monday24h, at("2025-03-11 07:59:00"), true},
		{"08:00–08:00 monday: tuesday 08:00", monday24h, at("2025-03-11 08:00:00"), false},
		{"08:00–08:00 monday: monday 07:59", monday24h, at("2025-03-10 07:59:00"), false},
		{"end 24:00: last second of monday", mondayEvening, at("2025-03-10 23:59:59"), true},
		{"end 24:00: tuesday midnight", mondayEvening, at("2025-03-11 00:00:00"), false},
		{"a UTC time in a Paris range, winter (UTC+1)", everyDay, utc("2025-03-12 07:30:00"), true},
		{"a UTC time in a Paris range, winter, before", everyDay, utc("2025-03-12 06:59:00"), false},
		{"a UTC time in a Paris range, summer (UTC+2)", everyDay, utc("2025-07-09 06:30:00"), true},
		{"a UTC time in a Paris range, summer, at the end", everyDay, utc("2025-07-09 16:00:00"), false},
		{"New York range, 09:30 EDT", newYork, utc("2025-03-12 13:30:00"), true},
		{"New York range, 08:30 EDT", newYork, utc("2025-03-12 12:30:00"), false},
		{"New York range, the day is New York's", newYork, utc("2025-03-13 00:30:00"), false},
		{"Kolkata range, 09:00 IST (UTC+5:30)", kolkata, utc("2025-03-12 03:30:00"), true},
		{"Kolkata range, 09:30 IST", kolkata, utc("2025-03-12 04:00:00"), false},
		{"nil location is Paris", noLocation, utc("2025-03-12 07:30:00"), true},
		{"nil location is not UTC", noLocation, utc("2025-03-12 08:30:00"), false},
		// DST in Paris, 2025-03-30: 02:00 CET jumps to 03:00 CEST.
		{"spring forward: 01:59 CET is before the range", twoToThree, utc("2025-03-30 00:59:00"), false},
		{"spring forward: 03:00 CEST, the skipped hour is in no range", twoToThree, utc("2025-03-30 01:00:00"), false},
		{"the day before, 02:30 CET", twoToThree, utc("2025-03-29 01:30:00"), true},
		{"spring forward: 01:30 CET inside 01:00–04:00", oneToFour, utc("2025-03-30 00:30:00"), true},
		{"spring forward: 03:30 CEST inside 01:00–04:00 (2 real hours)", oneToFour, utc("2025-03-30 01:30:00"), true},
		{"spring forward: 04:00 CEST ends 01:00–04:00", oneToFour, utc("2025-03-30 02:00:00"), false},
		// 2025-10-26: 03:00 CEST goes back to 02:00 CET.
		{"fall back: 02:30 CEST", twoToThree, utc("2025-10-26 00:30:00"), true},
		{"fall back: 02:30 CET, the repeated hour, again", twoToThree, utc("2025-10-26 01:30:00"), true},
		{"fall back: 03:00 CET", twoToThree, utc("2025-10-26 02:00:00"), false},
		{"fall back: 01:59 CEST", twoToThree, utc("2025-10-25 23:59:00"), false},
		{"overnight across spring forward: sunday 05:59 CEST", saturdayNight, utc("2025-03-30 03:59:00"), true},
		{"overnight across spring forward: sunday 06:00 CEST", saturdayNight, utc("2025-03-30 04:00:00"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Contains(c.t); got != c.want {
				t.Errorf("Contains(%s) = %v, want %v", c.t.In(paris).Format("Mon 2006-01-02 15:04:05 MST"), got, c.want)
			}
		})
	}
}

func TestParseRange(t *testing.T) {
	all := [7]bool{}
	cases := []struct {
		name       string
		days       []string
		start, end string
		tz         string
		want       Range
		zone       string
	}{
		{"short names, any case", []string{"mon", "TUE", "Fri"}, "08:00", "18:00", "",
			Range{Days: dtDays(time.Monday, time.Tuesday, time.Friday), Start: 480, End: 1080}, "Europe/Paris"},
		{"full names, spaces", []string{" Wednesday ", "SUNDAY"}, "8:05", "23:59", "UTC",
			Range{Days: dtDays(time.Wednesday, time.Sunday), Start: 485, End: 1439}, "UTC"},
		{"no days is every day", nil, "00:00", "00:00", "America/New_York", Range{Days: all}, "America/New_York"},
		{"* is every day", []string{"*"}, "22:00", "06:00", "", Range{Days: all, Start: 1320, End: 360}, "Europe/Paris"},
		{"all is every day", []string{"ALL"}, "10:00", "11:00", "", Range{Days: all, Start: 600, End: 660}, "Europe/Paris"},
		{"empty name is every day", []string{""}, "10:00", "11:00", "", Range{Days: all, Start: 600, End: 660}, "Europe/Paris"},
		{"* with days is every day", []string{"mon", "*"}, "10:00", "11:00", "", Range{Days: all, Start: 600, End: 660}, "Europe/Paris"},
		{"end 24:00", []string{"sat"}, "20:00", "24:00", "", Range{Days: dtDays(time.Saturday), Start: 1200, End: 1440}, "Europe/Paris"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseRange(c.days, c.start, c.end, c.tz)
			if err != nil {
				t.Fatal(err)
			}
			if got.Location == nil || got.Location.String() != c.zone {
				t.Errorf("location = %v, want %s", got.Location, c.zone)
			}
			got.Location = nil
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseRange_Errors(t *testing.T) {
	const notTime = "is not a time of day (HH:mm)"
	cases := []struct {
		name       string
		days       []string
		start, end string
		tz         string
		field      string
		msg        string
	}{
		{"hour 25", nil, "25:00", "10:00", "", "start", `"25:00" is not a time of day (HH:mm)`},
		{"start 24:00", nil, "24:00", "10:00", "", "start", `"24:00" ` + notTime},
		{"end 24:01", nil, "10:00", "24:01", "", "end", `"24:01" ` + notTime},
		{"minute 60", nil, "08:60", "10:00", "", "start", `"08:60" ` + notTime},
		{"h separator", nil, "8h00", "10:00", "", "start", `"8h00" ` + notTime},
		{"one-digit minutes", nil, "08:0", "10:00", "", "start", `"08:0" ` + notTime},
		{"three-digit minutes", nil, "08:000", "10:00", "", "start", `"08:000" ` + notTime},
		{"three-digit hour", nil, "008:00", "10:00", "", "start", `"008:00" ` + notTime},
		{"sign", nil, "+8:00", "10:00", "", "start", `"+8:00" ` + notTime},
		{"negative", nil, "-1:00", "10:00", "", "start", `"-1:00" ` + notTime},
		{"letters", nil, "aa:bb", "10:00", "", "start", `"aa:bb" ` + notTime},
		{"seconds", nil, "08:00:00", "10:00", "", "start", `"08:00:00" ` + notTime},
		{"empty end", nil, "08:00", "", "", "end", `"" ` + notTime},
		{"unknown day", []string{"mon", "funday"}, "08:00", "10:00", "", "days",
			`"funday" is not a day of the week (mon, tue, wed, thu, fri, sat, sun, or * for every day)`},
		{"day abbreviation too short", []string{"mo"}, "08:00", "10:00", "", "days",
			`"mo" is not a day of the week (mon, tue, wed, thu, fri, sat, sun, or * for every day)`},
		{"the first wrong value is reported", []string{"funday"}, "25:00", "10:00", "Mars/Olympus", "days",
			`"funday" is not a day of the week (mon, tue, wed, thu, fri, sat, sun, or * for every day)`},
		{"unknown time zone", nil, "08:00", "10:00", "Europe/Pariss", "timezone",
			`"Europe/Pariss" is not a time zone (IANA name such as Europe/Paris)`},
		{"Local is refused", nil, "08:00", "10:00", "Local", "timezone",
			`"Local" is not allowed: name the zone (IANA name such as Europe/Paris)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRange(c.days, c.start, c.end, c.tz)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != c.msg {
				t.Errorf("error = %q, want %q", err, c.msg)
			}
			if !errors.Is(err, ErrBadRange) {
				t.Errorf("error does not wrap ErrBadRange")
			}
			var re *RangeError
			if !errors.As(err, &re) || re.Field != c.field {
				t.Errorf("field = %+v, want %s", re, c.field)
			}
		})
	}
}

func TestPolicy_KeepUp(t *testing.T) {
	night := stRange(t, nil, "22:00", "06:00", "UTC")
	lunch := stRange(t, []string{"wed"}, "12:00", "14:00", "UTC")
	cases := []struct {
		name string
		p    Policy
		t    time.Time
		want bool
	}{
		{"no ranges", Policy{}, dtNow, false},
		{"one range, outside", Policy{MustBeUp: []Range{night}}, dtNow, false},
		{"the second range contains it", Policy{MustBeUp: []Range{night, lunch}}, dtNow.Add(-time.Hour), true},
		{"the first range contains it", Policy{MustBeUp: []Range{night, lunch}}, dtNow.Add(9 * time.Hour), true},
		{"both end before", Policy{MustBeUp: []Range{night, lunch}}, dtNow, false},
	}
	for _, c := range cases {
		if got := c.p.KeepUp(c.t); got != c.want {
			t.Errorf("%s: KeepUp(%s) = %v, want %v", c.name, c.t, got, c.want)
		}
	}
}

// Every wrong value of the windows is reported, each at its own path, even
// when the time zone is wrong too.
func TestConfig_ReportsEveryProblemOfTheWindows(t *testing.T) {
	c := DefaultConfig()
	c.AppID = "app"
	c.Timezone = "Mars/Olympus"
	c.MustBeUpAt = []RangeConfig{
		{Days: []string{"mon", "funday", "tue", "moonday"}, Start: "25:00", End: "8"},
		{Days: []string{"*"}},
	}
	var errs conf.Errors
	c.Validate("routes[0].plugins[0].config", &errs)
	got := errs.Err().Error()
	for _, want := range []string{
		`routes[0].plugins[0].config.timezone: "Mars/Olympus" is not a known time zone`,
		`routes[0].plugins[0].config.must_be_up_at[0].days[1]: "funday" is not a day of the week`,
		`routes[0].plugins[0].config.must_be_up_at[0].days[3]: "moonday" is not a day of the week`,
		`routes[0].plugins[0].config.must_be_up_at[0].start: "25:00" is not a time of day`,
		`routes[0].plugins[0].config.must_be_up_at[0].end: "8" is not a time of day`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant a line %q", got, want)
		}
	}
	if strings.Contains(got, "must_be_up_at[1]") {
		t.Errorf("days [*] without times was refused:\n%s", got)
	}
}

// As in the reference: days ["*"] without times is every day from 08:00 to
// 19:00, and every_day and everyday are "*".
func TestParseRange_ReferenceDefaults(t *testing.T) {
	for _, days := range [][]string{{"*"}, {"every_day"}, {"EveryDay"}, nil} {
		r, err := ParseRange(days, "", "", "UTC")
		if err != nil || r.Days != [7]bool{} || r.Start != 8*60 || r.End != 19*60 {
			t.Errorf("ParseRange(%q, no times) = %+v, %v; want every day 08:00-19:00", days, r, err)
		}
	}
	if _, err := ParseRange([]string{"*"}, "09:00", "", "UTC"); err == nil {
		t.Error("a start without an end was accepted")
	}
}

func TestConfig_RetiredClientPollIsHold(t *testing.T) {
	c := DefaultConfig()
	c.AppID, c.APIBehavior = "app", "client_poll"
	var errs conf.Errors
	c.Validate("cfg", &errs)
	if err := errs.Err(); err != nil || c.APIBehavior != BehaviorHold {
		t.Fatalf("client_poll: %v, behaviour %q; want hold, as the reference falls back", err, c.APIBehavior)
	}
}

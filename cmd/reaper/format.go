package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// How the admin commands print for people: times relative to now ("3m ago",
// "in 12m"), short durations, money. Each function is pure: now is passed in.

// short prints a duration for people, to two units at most: 45s, 3m, 3m20s,
// 2h5m, 3d4h. It rounds to the second; under a second is "0s".
func short(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 0 {
		s = -s
	}
	units := []struct {
		n    int64
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}}
	for i, u := range units {
		if s < u.n && u.n > 1 {
			continue
		}
		out := fmt.Sprintf("%d%s", s/u.n, u.name)
		if i+1 < len(units) {
			if rest := s % u.n / units[i+1].n; rest > 0 {
				out += fmt.Sprintf("%d%s", rest, units[i+1].name)
			}
		}
		return out
	}
	return "0s"
}

// ago prints t relative to now: "3m ago", "in 12m", "now" within a second, "-"
// for no time.
func ago(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	d := now.Sub(*t)
	switch {
	case d > -time.Second && d < time.Second:
		return "now"
	case d > 0:
		return short(d) + " ago"
	default:
		return "in " + short(-d)
	}
}

// agoAt is ago for a time that is not a pointer.
func agoAt(t time.Time, now time.Time) string { return ago(&t, now) }

// seconds prints a number of seconds as a short duration: 40ms, 2.3s, 1m5s.
func seconds(s float64) string {
	switch {
	case s < 1:
		return fmt.Sprintf("%dms", int(math.Round(s*1000)))
	case s < 60:
		return fmt.Sprintf("%.1fs", s)
	}
	return short(time.Duration(s * float64(time.Second)))
}

// holdText says what an active hold is: "until in 6h (alice: backup)".
func holdText(h *reaper.KeepWarm, now time.Time) string {
	if h == nil {
		return "-"
	}
	out := "until " + agoAt(h.Until, now)
	var who []string
	if h.By != "" {
		who = append(who, h.By)
	}
	if h.Reason != "" {
		who = append(who, h.Reason)
	}
	if len(who) > 0 {
		out += " (" + strings.Join(who, ": ") + ")"
	}
	return out
}

// phasesText prints a wake's phases: "2.3s: start_accepted 0.1s, platform_up 2.2s".
func phasesText(total float64, phases []reaper.PhaseDuration) string {
	parts := make([]string, len(phases))
	for i, p := range phases {
		parts[i] = p.Phase + " " + seconds(p.Seconds)
	}
	if len(parts) == 0 {
		return seconds(total)
	}
	return seconds(total) + ": " + strings.Join(parts, ", ")
}

// change prints an entry's change of status, "Down → WaitingForUp", or the
// status alone when it did not change.
func change(from, to reaper.Status) string {
	switch {
	case from == to:
		return string(to)
	case from == "":
		return "→ " + string(to)
	}
	return string(from) + " → " + string(to)
}

// money prints an amount with its currency: "12.34 EUR".
func money(amount float64, currency string) string {
	if math.Abs(amount) < 0.005 {
		amount = 0 // no "-0.00"
	}
	return strings.TrimSpace(fmt.Sprintf("%.2f %s", amount, currency))
}

// orDashN prints a count, "-" for none.
func orDashN(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

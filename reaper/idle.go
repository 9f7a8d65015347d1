package reaper

import "time"

// When an app may sleep: its idle clock, an operator's "sleep now", and when it
// will sleep if nothing happens. Pure, like Decide, which uses them.

// Idle reports whether the app may be put to sleep: not Busy, outside every
// keep-up range, not held awake, and now − idleSince ≥ GracePeriod, where
// idleSince is the latest of LastAccess, rec.LastUpAt and the end of the
// operator's hold. Counting from LastUpAt gives an app that just came up (woken,
// or started from outside) a full grace period even when its last request is
// older; counting from the hold's end gives one after the hold.
//
// A member of a group is not idle while its group is in use (in.Group.Keep),
// nor before its turn to stop (in.Group.StopAfter: the groups' reverse order,
// or an app awake that depends on it).
func Idle(rec Record, in Input, now time.Time, p Policy) bool {
	if in.Group.Keep || in.Group.StopAfter != "" {
		return false
	}
	if in.Busy || p.KeepUp(now) || rec.Hold.Active(now) {
		return false
	}
	return now.Sub(idleSince(rec, in)) >= p.GracePeriod
}

func idleSince(rec Record, in Input) time.Time {
	t := latest(in.LastAccess, rec.LastUpAt)
	if rec.Hold != nil {
		t = latest(t, rec.Hold.Until)
	}
	return t
}

// sleepAsked reports whether an operator's pending "sleep now" puts the app to
// sleep at now: never while Busy (nothing cuts a request in flight) nor before
// its turn in its group or while an app that depends on it is awake
// (in.Group.StopAfter), and, unless forced, not inside a keep-up range or a hold.
func sleepAsked(rec Record, in Input, now time.Time, p Policy) bool {
	if !rec.SleepAsk.Pending(rec) || in.Busy || in.Group.StopAfter != "" {
		return false
	}
	return rec.SleepAsk.Force || (!p.KeepUp(now) && !rec.Hold.Active(now))
}

// ReapAt is when the app goes to sleep if nothing happens (the admin API's
// reap_at), as of now: the latest of LastAccess, LastUpAt and the end of a hold,
// plus GracePeriod — or, inside a keep-up range, the range's end if later. It is
// zero when the app is Busy or not Up, or when keep-up ranges keep it up for
// more than a week (always). NotShutdownable is not taken into account.
func ReapAt(rec Record, in Input, p Policy, now time.Time) time.Time {
	if in.Busy || rec.Status != StatusUp {
		return time.Time{}
	}
	at := idleSince(rec, in).Add(p.GracePeriod)
	if p.KeepUp(now) {
		end, ok := p.KeepUpUntil(now)
		if !ok {
			return time.Time{}
		}
		at = latest(at, end)
	}
	return at
}

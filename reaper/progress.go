package reaper

import (
	"time"

	"github.com/reapergw/reaper/page"
)

// wakeView is how far an app's wake went as this node sees it: what the
// waiting page shows, and what its live progress stream sends.
type wakeView struct {
	status Status
	// state is the page's: page.StateWaiting while the app sleeps or wakes,
	// StateAlmost while it is up within the route's ready delay, StateError,
	// and page.StateReady once requests go through to it.
	state    string
	progress page.Progress
	// readyAt is when requests will go through, for an app up within its ready
	// delay; zero otherwise.
	readyAt time.Time
}

// routeView is the wake of the app r claims, at now (viewOf).
func routeView(r *Route, now time.Time) wakeView {
	eta, samples := r.ETA()
	return viewOf(r.Record(), r.UpSeen(), eta, samples, r.ReadyDelay(), now)
}

// viewOf is the wake of an app whose last known record is rec, at now: upSeen
// is when this node saw it come up, eta and samples its usual boot (Route.ETA),
// readyDelay the route's. Ready means what the holds mean by it (holdOutcome):
// the app's record says Up and readyDelay has passed since this node saw it
// come up, so that a page that reloads then lands on the app, not on the
// waiting page again. An app whose record reaper does not know yet
// (WaitingForInit) is ready too: its requests go through. Pure: it takes now.
func viewOf(rec *Record, upSeen time.Time, eta time.Duration, samples int, readyDelay time.Duration, now time.Time) wakeView {
	v := wakeView{status: StatusWaitingForInit}
	v.progress.ETA, v.progress.Samples = eta, samples
	var w *WakeTimes
	if rec != nil {
		v.status, w = rec.Status, rec.Wake
	}
	switch st := v.status; {
	case st == StatusError:
		v.state = page.StateError
	case st == StatusWaitingForUp:
		v.state = page.StateWaiting
		phasesOf(&v.progress, w, now)
	case st.Asleep():
		// Going to sleep, or asleep with the ask not taken up yet: the wake
		// has no time of its own.
		v.state = page.StateWaiting
	case st == StatusUp:
		if w != nil && !w.UpAt.IsZero() && !w.UpAt.Before(rec.LastUpAt) {
			phasesOf(&v.progress, w, now) // this wake brought it up
		}
		readyAt := upSeen.Add(readyDelay)
		if now.Before(readyAt) {
			v.state, v.readyAt = page.StateAlmost, readyAt
			return v
		}
		v.state = page.StateReady
		if v.progress.Up > 0 {
			v.progress.Ready = v.progress.Up + readyDelay
		}
	default:
		v.state = page.StateReady
	}
	return v
}

// phasesOf fills the times of the wake's phases in, counted from its ask.
func phasesOf(p *page.Progress, w *WakeTimes, now time.Time) {
	if w == nil || w.AskedAt.IsZero() {
		return
	}
	p.Asked, p.Waited = true, max(0, now.Sub(w.AskedAt))
	since := func(t time.Time) time.Duration {
		if t.IsZero() || t.Before(w.AskedAt) {
			return 0
		}
		return max(t.Sub(w.AskedAt), time.Microsecond) // reached, however soon
	}
	p.Accepted, p.Up = since(w.AcceptedAt), since(w.UpAt)
}

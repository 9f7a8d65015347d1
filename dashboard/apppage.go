package dashboard

import (
	"net/http"
	"strconv"

	"github.com/reapergw/reaper/reaper"
)

// holdChoices are the durations the hold form offers.
var holdChoices = []struct{ Value, Label string }{
	{"1h", "1 hour"}, {"4h", "4 hours"}, {"8h", "8 hours"}, {"1d", "1 day"}, {"3d", "3 days"}, {"7d", "7 days"},
}

// appPage serves /apps/{id}: the app's state, actions, wakes, why it is
// awake, savings and history (?page= pages through it).
func (d *Dashboard) appPage(w http.ResponseWriter, r *http.Request, s session) {
	id := r.PathValue("id")
	page := 1
	if p, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && p > 1 {
		page = p
	}
	f := d.frame(s, id)
	f.Flash, f.App = d.takeFlash(w, r), id
	v, err := d.loadApp(r.Context(), id, page)
	switch {
	case isNotFound(err):
		d.render(w, r, http.StatusNotFound, messagePage(f, "There is no app "+strconv.Quote(id)+".", "/", "Back to the apps"))
	case err != nil:
		d.render(w, r, http.StatusServiceUnavailable, messagePage(f, "The app cannot be read: "+errText(err), "/", "Back to the apps"))
	default:
		d.render(w, r, http.StatusOK, appPageView(f, v))
	}
}

// pages is the number of pages of the history.
func (v appData) pages() int { return max(1, (v.Total+historyPage-1)/historyPage) }

// pageLink is the URL of a page of the app's history.
func (v appData) pageLink(p int) string {
	u := appURL(v.App.AppID)
	if p > 1 {
		u += "?page=" + strconv.Itoa(p)
	}
	return u
}

// entryKind is how a history entry is drawn: its icon class.
func entryKind(t reaper.Transition) string {
	if t.Kind == "" {
		return "st-" + statusClass(t.To)
	}
	return "k-" + t.Kind
}

// entryTitle is the headline of a history entry.
func entryTitle(t reaper.Transition) string {
	switch t.Kind {
	case "":
		return string(t.From) + " → " + string(t.To)
	case reaper.EventHold:
		if t.Hold != nil {
			return "Held awake until " + stamp(t.Hold.Until)
		}
		return "Held awake"
	case reaper.EventRelease:
		return "Hold released"
	case reaper.EventHoldExpired:
		return "Hold ran out"
	case reaper.EventSleep:
		return "Put to sleep"
	case reaper.EventWakeAsk:
		return "Wake asked"
	case reaper.EventWake:
		if t.Phases != nil {
			return "Woke in " + seconds(t.Phases.Total().Seconds())
		}
		return "Woke"
	case reaper.EventArrival:
		return "First request"
	case reaper.EventPrewake:
		return "Pre-wake: " + t.Cause
	}
	return t.Kind
}

// entryDetail is the line under the headline.
func entryDetail(t reaper.Transition) string {
	switch {
	case t.Kind == reaper.EventWake && t.Phases != nil:
		return phasesText(t.Phases.Durations())
	case t.Phases != nil: // the change to Up after a wake (reaper.UpPhases)
		return t.Cause + ": " + phasesText(t.Phases.Durations())
	case t.Kind == reaper.EventPrewake:
		return "" // the cause (hit or miss) is in the title
	}
	return t.Cause
}

// mergeWakes keeps one wake entry per wake: in a cluster, each node that
// answered a held request after the wake wrote one (the change to Up, which
// carries the phases as far as the platform goes, is a change of status and
// stays). The newest entry with the most phases stands for the wake.
func mergeWakes(items []reaper.Transition) []reaper.Transition {
	best := map[int64]int{} // the wake's ask → most phases seen
	for _, t := range items {
		if t.Kind == reaper.EventWake && t.Phases != nil {
			k := t.Phases.AskedAt.UnixNano()
			best[k] = max(best[k], len(t.Phases.Durations()))
		}
	}
	out := make([]reaper.Transition, 0, len(items))
	for _, t := range items {
		if t.Kind == reaper.EventWake && t.Phases != nil {
			k := t.Phases.AskedAt.UnixNano()
			n, ok := best[k]
			if !ok || len(t.Phases.Durations()) < n {
				continue
			}
			delete(best, k) // the first with the most phases stands for the wake
		}
		out = append(out, t)
	}
	return out
}

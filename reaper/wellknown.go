package reaper

import (
	"net/http"
	"strings"

	"github.com/reapergw/reaper/plugin"
)

// Paths under /.well-known/reaper/ are reaper's own on every host it manages
// (under the path of the route's domain, for a domain with one): answered by
// reaper, awake app or not, never passed to the app, never a wake of their own,
// never traffic.

// WellKnownPrefix starts every path reaper keeps for itself on managed hosts.
const WellKnownPrefix = "/.well-known/reaper/"

// wellKnown answers a request under WellKnownPrefix; ok is false for a path
// reaper does not know there (it then goes the usual way).
func (p *Plugin) wellKnown(ex *plugin.Exchange) (answer *plugin.Answer, ok bool, err error) {
	path := strings.TrimPrefix(ex.Request.URL.Path, ex.PathPrefix())
	switch path {
	case WellKnownStatusPath:
		return p.wellKnownStatus(ex), true, nil
	case WellKnownEventsPath:
		return p.liveEvents(ex), true, nil
	case WellKnownPreviewPath:
		answer, err = p.preview(ex)
		return answer, true, err
	}
	return nil, false, nil
}

// isWellKnown reports whether the request's path, within the route's domain,
// is under WellKnownPrefix.
func isWellKnown(ex *plugin.Exchange) bool {
	return strings.HasPrefix(strings.TrimPrefix(ex.Request.URL.Path, ex.PathPrefix()), WellKnownPrefix)
}

// WellKnownStatusPath is for uptime monitors that cannot send a header: the
// app's status. 200 while the app is up or asleep on purpose, 503 in Error.
const WellKnownStatusPath = "/.well-known/reaper/status"

func (p *Plugin) wellKnownStatus(ex *plugin.Exchange) *plugin.Answer {
	ex.Class, ex.Outcome = kindNames[kindMonitor], OutcomeStatus
	if a := onlyGet(ex, WellKnownStatusPath); a != nil {
		return a
	}
	st := p.route.Status()
	code := http.StatusOK
	if st == StatusError {
		code = http.StatusServiceUnavailable
	}
	body := map[string]any{"app_id": p.route.AppID(), "status": string(st), "asleep": st.Asleep(), "monitoring": true}
	if rec := p.route.Record(); rec != nil && st.Asleep() {
		body["asleep_since"] = rec.LastStatusUpdate
	}
	a := answer(ex, code, st, body)
	a.Header.Del("Retry-After")
	return a
}

package reaper

import (
	"net/http"
	"strings"
)

// The wire protocol as one table: what kind of request this is (classify), and
// what the gateway does with a request of that kind for an app in a given status
// (answerFor). ValidateAccess, TransformResponse and HandleDialFailure all answer
// through these two; docs/reaper.md describes the same table for users.

// requestKind sorts a request for the protocol.
type requestKind uint8

const (
	kindAPI         requestKind = iota // anything else: API calls, form posts, scripts
	kindBrowser                        // a page load: GET or HEAD whose Accept asks for HTML
	kindMonitor                        // a monitoring filter of the route matches
	kindPoll                           // CleverCloud-Reaper: poll (the waiting page's own check)
	kindStatus                         // CleverCloud-Reaper: status
	kindNotActivity                    // a not_activity path of the route (a crawler's robots.txt)
)

var kindNames = [...]string{kindAPI: "api", kindBrowser: "browser", kindMonitor: "monitor", kindPoll: "poll", kindStatus: "status",
	kindNotActivity: "not_activity"}

func (k requestKind) String() string { return kindNames[k] }

// classify sorts r: the reaper header first (its value in any case), then the
// route's monitoring filters, then its not_activity paths, then a page load. A
// poll or a status request that a monitoring filter would match is still a poll
// or a status request; a monitor's request for /robots.txt is a monitor's.
func (c *Config) classify(r *http.Request) requestKind {
	var h string
	if v := r.Header[headerReaperKey]; len(v) > 0 {
		h = v[0]
	}
	switch strings.ToLower(h) {
	case "status":
		return kindStatus
	case "poll":
		return kindPoll
	}
	if c.isMonitoring(r) {
		return kindMonitor
	}
	if c.isNotActivity(r) {
		return kindNotActivity
	}
	if isBrowser(r) {
		return kindBrowser
	}
	return kindAPI
}

// headerReaperKey is HeaderReaper in the canonical form net/http stores headers
// under: looked up as such, it costs no allocation on every request.
var headerReaperKey = http.CanonicalHeaderKey(HeaderReaper)

// isBrowser reports whether the request is a page load: GET or HEAD whose Accept
// asks for HTML.
func isBrowser(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.Contains(r.Header.Get("Accept"), "text/html")
}

// reply is what the gateway does with a request.
type reply uint8

const (
	// replyForward sends the request to the app; it counts as traffic until it
	// ends.
	replyForward reply = iota
	// replyForwardQuiet sends the request to the app without counting it as
	// traffic: it keeps the app from being stopped under it, but does not move
	// its idle clock.
	replyForwardQuiet
	replyStatus      // 200 {"status", "ready_delay_ms"}
	replyPoll        // 503 with the same JSON
	replyMonitoring  // 200 {"monitoring": true, "status"}
	replyWaitingPage // 503 with the waiting page
	replyUnavailable // 503 with Retry-After
	replyHold        // wait until the app is ready, then forward
)

var replyNames = [...]string{
	replyForward: "forward", replyForwardQuiet: "forward_quiet", replyStatus: "status", replyPoll: "poll",
	replyMonitoring: "monitoring", replyWaitingPage: "waiting_page", replyUnavailable: "unavailable", replyHold: "hold",
}

func (r reply) String() string { return replyNames[r] }

// verdict is the protocol's answer to one request: the reply, and what the
// request does to a sleeping app besides.
type verdict struct {
	reply reply
	touch bool // it counts as traffic now (a forwarded request counts as it ends)
	wake  bool // it asks for a wake
}

// answerFor is the protocol table: what the gateway does with a request of kind k
// for an app in status st, on a route with the given allow_waiting_page and
// api_behavior.
//
//   - status: always answered by the gateway, never traffic, never a wake;
//   - poll: answered while the app sleeps (asking a wake) or is in Error,
//     otherwise sent to the app; never traffic;
//   - monitor: answered 200 while the app sleeps, without a wake; sent to the app
//     otherwise; never traffic;
//   - browser and api: sent to the app unless it sleeps (Up, Error and unknown
//     mean go); while it sleeps they are traffic and ask a wake, and get the
//     waiting page (browsers, when the route allows it), a 503 (unavailable) or
//     are held (hold);
//   - not_activity: as api (a sleeping app is woken to answer it), but never
//     traffic: it is sent to the app quietly.
func answerFor(k requestKind, st Status, allowWaitingPage bool, apiBehavior string) verdict {
	asleep := st.Asleep()
	switch k {
	case kindStatus:
		return verdict{reply: replyStatus}
	case kindPoll:
		switch {
		case asleep:
			return verdict{reply: replyPoll, wake: true}
		case st == StatusError:
			return verdict{reply: replyPoll}
		}
		return verdict{reply: replyForwardQuiet}
	case kindMonitor:
		if asleep {
			return verdict{reply: replyMonitoring}
		}
		return verdict{reply: replyForwardQuiet}
	case kindNotActivity:
		switch {
		case !asleep:
			return verdict{reply: replyForwardQuiet}
		case apiBehavior == BehaviorUnavailable:
			return verdict{reply: replyUnavailable, wake: true}
		}
		return verdict{reply: replyHold, wake: true}
	}
	if !asleep {
		return verdict{reply: replyForward}
	}
	v := verdict{reply: replyHold, touch: true, wake: true}
	switch {
	case k == kindBrowser && allowWaitingPage:
		v.reply = replyWaitingPage
	case apiBehavior == BehaviorUnavailable:
		v.reply = replyUnavailable
	}
	return v
}

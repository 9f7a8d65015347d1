package reaper

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reapergw/reaper/page"
	"github.com/reapergw/reaper/plugin"
)

// The wire protocol's headers, kept from the reference reaper so its waiting pages,
// monitors and scripts keep working.
const (
	// HeaderReaper is the request header by which a caller asks for the app's
	// status ("status") or polls for its wake ("poll").
	HeaderReaper = "CleverCloud-Reaper"
	// HeaderStatus marks every answer the gateway gives in place of the app.
	HeaderStatus = "CleverCloud-Reaper-Status"
	// HeaderETA, on an answer given while the app wakes, is how many more
	// seconds the wake should take by the app's recent boots (absent until one
	// was measured).
	HeaderETA = "Reaper-Wake-ETA"
)

// retryAfter is what sleeping apps' answers tell clients to wait, in seconds.
const retryAfter = "30"

// answer builds a JSON answer given in place of the app, marked with the status.
func answer(ex *plugin.Exchange, code int, st Status, body map[string]any) *plugin.Answer {
	body["request_id"] = ex.ID
	a := plugin.JSONAnswer(code, body)
	a.Header.Set(HeaderStatus, st.Marker())
	a.Header.Set("Cache-Control", "no-store")
	if code == http.StatusServiceUnavailable {
		a.Header.Set("Retry-After", retryAfter)
	}
	return a
}

// answer gives the gateway's answer for a reply that does not forward the
// request at once (see answerFor); replyHold holds it, then forwards it.
func (p *Plugin) answer(ex *plugin.Exchange, r reply, st Status) (*plugin.Answer, error) {
	if r != replyHold {
		ex.Outcome = outcomeOf[r]
	}
	switch r {
	case replyStatus:
		return p.statusAnswer(ex, st), nil
	case replyPoll:
		return p.pollAnswer(ex, st), nil
	case replyMonitoring:
		return p.monitoringAnswer(ex, st), nil
	case replyWaitingPage:
		return p.waitingPage(ex, st)
	case replyUnavailable:
		return p.unavailableAnswer(ex, st), nil
	case replyHold:
		return p.holdThenAdmit(ex)
	}
	return nil, fmt.Errorf("reaper: no answer for the reply %s", r)
}

// The outcomes of answers given in the app's place (plugin.Exchange.Outcome),
// as metrics label them.
const (
	OutcomeStatus          = "status"
	OutcomeMonitoring      = "monitoring"
	OutcomeWaitingPage     = "waiting_page"
	OutcomeUnavailable     = "unavailable"
	OutcomeHeldThenProxied = "held_then_proxied"
	OutcomeTimeout         = "timeout"
	OutcomeTooManyHeld     = "too_many_held"
	OutcomeError           = "error"
	OutcomeClientClosed    = "client_closed"
)

var outcomeOf = [...]string{replyStatus: OutcomeStatus, replyPoll: OutcomeStatus, replyMonitoring: OutcomeMonitoring,
	replyWaitingPage: OutcomeWaitingPage, replyUnavailable: OutcomeUnavailable, replyForward: "", replyForwardQuiet: "", replyHold: ""}

// statusAnswer says the app's status as the reference does: WaitingForInit (an
// app not observed yet) shows as Up, in the JSON as in the header.
func (p *Plugin) statusAnswer(ex *plugin.Exchange, st Status) *plugin.Answer {
	return answer(ex, http.StatusOK, st, map[string]any{
		"status": st.Marker(), "ready_delay_ms": p.route.ReadyDelay().Milliseconds(),
	})
}

func (p *Plugin) pollAnswer(ex *plugin.Exchange, st Status) *plugin.Answer {
	return answer(ex, http.StatusServiceUnavailable, st, map[string]any{
		"status": string(st), "ready_delay_ms": p.route.ReadyDelay().Milliseconds(),
	})
}

func (p *Plugin) monitoringAnswer(ex *plugin.Exchange, st Status) *plugin.Answer {
	return answer(ex, http.StatusOK, st, map[string]any{"monitoring": true, "status": string(st)})
}

func (p *Plugin) unavailableAnswer(ex *plugin.Exchange, st Status) *plugin.Answer {
	body := map[string]any{"error": "the application is waking up, retry later", "status": string(st)}
	eta, known := retryAfterSeconds(p.engine.Remaining(p.AppID, time.Now()))
	if known {
		body["eta_seconds"], _ = strconv.Atoi(eta)
	}
	a := answer(ex, http.StatusServiceUnavailable, st, body)
	if known {
		a.Header.Set("Retry-After", eta)
		a.Header.Set(HeaderETA, eta)
	}
	return a
}

// retryAfterSeconds is the Retry-After of an answer given while the app wakes,
// from what is left of its wake by its ETA (Engine.Remaining): at least 1 s, or
// the reference's 30 s when unknown.
func retryAfterSeconds(left time.Duration, known, late bool) (string, bool) {
	if !known {
		return retryAfter, false
	}
	if late {
		left = time.Second // longer than usual: look again soon
	}
	return strconv.Itoa(max(1, int(math.Ceil(left.Seconds())))), true
}

// failedAnswer answers for an app in Error, with the Error's cause: rec's, the
// record on which the request's hold ended (the same for every request held for
// the wake), else the app's record now.
func (p *Plugin) failedAnswer(ex *plugin.Exchange, rec *Record) *plugin.Answer {
	body := map[string]any{"error": "the application could not be started", "status": string(StatusError)}
	if rec == nil || rec.Status != StatusError {
		rec = p.route.Record()
	}
	if rec != nil && rec.Status == StatusError {
		if c := publicCause(rec.ErrorCause); c != "" {
			body["cause"] = c
		}
	}
	return answer(ex, http.StatusServiceUnavailable, StatusError, body)
}

// publicCauseMax bounds the cause given to clients, in bytes.
const publicCauseMax = 300

// publicCause is the part of an Error's cause that clients are told: its first
// line, without what the app itself printed (the process driver appends the
// tail of the app's output, which may hold anything the app logs, secrets
// included: operators read it in the admin API and the logs), at most
// publicCauseMax bytes.
func publicCause(cause string) string {
	cause, _, _ = strings.Cut(cause, "\n")
	cause = strings.TrimSuffix(strings.TrimSpace(cause), "; last output:")
	if len(cause) > publicCauseMax {
		cut := publicCauseMax
		for cut > 0 && !utf8.RuneStart(cause[cut]) {
			cut--
		}
		cause = cause[:cut] + "…"
	}
	return cause
}

func (p *Plugin) timeoutAnswer(ex *plugin.Exchange, st Status) *plugin.Answer {
	return answer(ex, http.StatusGatewayTimeout, st, map[string]any{
		"error": "the application did not wake up in time", "status": string(st),
	})
}

func (p *Plugin) tooManyAnswer(ex *plugin.Exchange, st Status) *plugin.Answer {
	return answer(ex, http.StatusServiceUnavailable, st, map[string]any{
		"error":  "too many requests are waiting for the application, retry later",
		"status": string(st),
	})
}

func (p *Plugin) shutdownAnswer(ex *plugin.Exchange, st Status) *plugin.Answer {
	a := answer(ex, http.StatusServiceUnavailable, st, map[string]any{
		"error": "the gateway is restarting, retry", "status": string(st),
	})
	a.Header.Set("Retry-After", "1")
	return a
}

// waitingPage answers a browser with the waiting page (503, so that crawlers and
// uptime checks never take it for the site's content): the built-in one or the
// route's own, with the wake's progress and the path of its live stream.
func (p *Plugin) waitingPage(ex *plugin.Exchange, st Status) (*plugin.Answer, error) {
	w := p.waiting(ex, st)
	w.Progress = routeView(p.route, time.Now()).progress
	w.EventsURL = ex.PathPrefix() + WellKnownEventsPath
	body, err := p.renderPage(ex, w, ex.Request.Header.Get("Accept-Language"))
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", retryAfter)
	h.Set(HeaderStatus, st.Marker())
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if ex.Request.Method == http.MethodHead {
		body = nil
	}
	return &plugin.Answer{Status: http.StatusServiceUnavailable, Header: h, Body: body}, nil
}

// waiting is what the waiting page of a request shows for an app in status st.
func (p *Plugin) waiting(ex *plugin.Exchange, st Status) page.Waiting {
	return page.Waiting{
		RouteName: p.routeName,
		AppName:   p.appName(),
		AppID:     p.AppID,
		Status:    string(st),
		RequestID: ex.ID,
		Node:      p.opts.Node,
	}
}

// appName is the app's name on its platform, else the route's name.
func (p *Plugin) appName() string {
	if rec := p.route.Record(); rec != nil && rec.Name != "" {
		return rec.Name
	}
	return p.routeName
}

// renderPage renders the route's waiting page for w in the visitor's language:
// its own page if it has one, else the built-in one. A custom page that fails
// to render (past its output bound, say) gives way to the built-in one: the
// visitor still gets a page that opens the app.
func (p *Plugin) renderPage(ex *plugin.Exchange, w page.Waiting, lang string) ([]byte, error) {
	if p.page != nil {
		f, err := page.NewFields(ex.Context(), w, lang)
		if err == nil {
			var body []byte
			if body, err = p.page.Execute(f); err == nil {
				return body, nil
			}
		}
		p.pageErr.log(p.log, "the route's waiting page failed to render; the built-in page was served instead", err)
	}
	return page.RenderWaiting(ex.Context(), w, lang)
}

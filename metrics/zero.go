package metrics

import (
	"net/http"

	"github.com/reapergw/reaper/reaper"
)

// Series exist from the first scrape, at 0 until they move, for every app and
// route the node manages and every fixed label value: a dashboard shows an app
// before its first wake, and an alert on rate(…{answer="timeout"}[5m]) reads 0,
// not "no data" (Prometheus' advice: initialise the label values you know).
// Label values that are not fixed (a store operation) appear at their first
// count.

// The fixed label values, as docs/metrics.md lists them.
var (
	wakeCauses  = []string{"request", "keep_up", "hold", "prewake", "group", "other"}
	sleepCauses = []string{"idle", "operator"}
	wakePhases  = []string{reaper.PhaseAccepted, reaper.PhaseUp, reaper.PhaseFirstAnswer, "total"}
	paasCalls   = []string{"observe", "observe_all", "last_deployment", "start", "stop", "cost"}
	paasResults = []string{"ok", "not_found", "auth", "busy", "rate_limited", "unavailable", "start_failed",
		"never_deployed", "not_shutdownable", "canceled", "error"}
	webhookOutcomes = []string{"delivered", "retried", "dropped"}
)

// routeAnswers are the answers a request of each class can get on a route
// with the reaper plugin.
var routeAnswers = []struct {
	class   string
	answers []string
}{
	{"browser", []string{answerProxied, reaper.OutcomeWaitingPage, reaper.OutcomeError, reaper.OutcomeClientClosed}},
	{"api", []string{answerProxied, reaper.OutcomeHeldThenProxied, reaper.OutcomeUnavailable, reaper.OutcomeTimeout,
		reaper.OutcomeTooManyHeld, reaper.OutcomeError, reaper.OutcomeClientClosed}},
	{"monitor", []string{answerProxied, reaper.OutcomeMonitoring}},
	{"poll", []string{answerProxied, reaper.OutcomeStatus, reaper.OutcomeEvents}},
	{"status", []string{reaper.OutcomeStatus, reaper.OutcomePreview}},
}

// zeroDriver creates the platform call series of the node's driver.
func (m *Metrics) zeroDriver() {
	for _, call := range paasCalls {
		m.paasDur.WithLabelValues(m.driver, call)
		for _, outcome := range paasResults {
			m.paasN.WithLabelValues(m.driver, call, outcome)
		}
	}
}

// WatchWebhooks creates the delivery series of the configured webhooks.
func (m *Metrics) WatchWebhooks(names []string) {
	for _, name := range names {
		for _, outcome := range webhookOutcomes {
			m.webhooks.WithLabelValues(name, outcome)
		}
	}
}

// zeroApps creates the series of every app and route the engine manages now.
// Creating a series that exists changes nothing, so it runs before every
// scrape: apps a reload or a driver's discovery adds get theirs at once.
func (m *Metrics) zeroApps(e *reaper.Engine) {
	for _, a := range e.Managed() {
		id := a.App.ID
		m.heldWait.WithLabelValues(id)
		m.asks.WithLabelValues(id)
		for _, c := range wakeCauses {
			m.wakes.WithLabelValues(id, c)
		}
		for _, c := range sleepCauses {
			m.sleeps.WithLabelValues(id, c)
		}
		for _, p := range wakePhases {
			m.wakeDur.WithLabelValues(id, p)
		}
		for _, route := range a.Routes {
			for _, ra := range routeAnswers {
				m.duration.WithLabelValues(route, ra.class)
				for _, answer := range ra.answers {
					m.requests.WithLabelValues(route, ra.class, answer)
				}
			}
		}
	}
}

// zeroing creates the series of the apps before h serves a scrape.
func (m *Metrics) zeroing(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := m.node.Load(); n != nil && n.Engine != nil {
			m.zeroApps(n.Engine)
		}
		h.ServeHTTP(w, r)
	})
}

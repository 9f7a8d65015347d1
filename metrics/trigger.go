package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reapergw/reaper/trigger"
)

// The wake triggers' metrics (package trigger): what its Observer is told.
// trigger comes from the configuration, result and reason from fixed lists.

type triggerInstruments struct {
	checks  *prometheus.CounterVec
	wakes   *prometheus.CounterVec
	failing *prometheus.GaugeVec
	refused *prometheus.CounterVec
}

var (
	triggerResults = []string{trigger.ResultWork, trigger.ResultNone, trigger.ResultError}
	refusalReasons = []string{trigger.RefusedUnauthorized, trigger.RefusedRateLimited}
)

func (m *Metrics) triggerInstruments() triggerInstruments {
	return triggerInstruments{
		checks:  m.counterVec("reaper_trigger_checks_total", "Looks of a wake trigger at its source (a poll, a notification, a producer's call), by result: work, none, error. Made by the leader, but a producer's call on any node.", "trigger", "result"),
		wakes:   m.counterVec("reaper_trigger_wakes_total", "Wakes a trigger asked (its app was not up or waking already).", "trigger"),
		failing: m.gaugeVec("reaper_trigger_failing", "1 while a trigger's last look at its source failed, else 0 (and 0 on a node that does not run it).", "trigger"),
		refused: m.counterVec("reaper_trigger_endpoint_refused_total", "Calls to the producer endpoint refused on this node: unauthorized (a wrong token or an unknown id, alike) or rate_limited.", "reason"),
	}
}

// TriggerChecked implements trigger.Observer.
func (m *Metrics) TriggerChecked(id, result string) {
	m.trig.checks.WithLabelValues(id, result).Inc()
	failing := 0.0
	if result == trigger.ResultError {
		failing = 1
	}
	m.trig.failing.WithLabelValues(id).Set(failing)
}

// TriggerFired implements trigger.Observer.
func (m *Metrics) TriggerFired(id string) { m.trig.wakes.WithLabelValues(id).Inc() }

// TriggerRefused implements trigger.Observer.
func (m *Metrics) TriggerRefused(reason string) { m.trig.refused.WithLabelValues(reason).Inc() }

// TriggerStopped implements trigger.Observer: a trigger that no longer runs
// here (the leader's term ended) is not failing here.
func (m *Metrics) TriggerStopped(id string) { m.trig.failing.WithLabelValues(id).Set(0) }

// WatchTriggers creates the series of the configured triggers, at 0.
func (m *Metrics) WatchTriggers(ids []string) {
	for _, id := range ids {
		for _, r := range triggerResults {
			m.trig.checks.WithLabelValues(id, r)
		}
		m.trig.wakes.WithLabelValues(id)
		m.trig.failing.WithLabelValues(id)
	}
	for _, r := range refusalReasons {
		m.trig.refused.WithLabelValues(r)
	}
}

var _ trigger.Observer = (*Metrics)(nil)

package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/reaper"
)

// Node is what the scrape-time collectors read: the node's engine (its view of
// every app's record, its holds), the platform's prices, the gateway's parked
// requests and, in a cluster, the node's Raft state.
type Node struct {
	Engine *reaper.Engine
	// Pricer prices the savings; nil prices nothing.
	Pricer paas.Pricer
	// Parked returns the requests parked on this node (plugin.Gateway.Parked).
	Parked func() int
	// Raft returns whether this node leads and its term; nil on a single node.
	Raft func() (leader bool, term uint64)
}

var (
	descStatus = prometheus.NewDesc("reaper_app_status", "The app's status as this node last saw it: 1 for its status, one series per app.",
		[]string{"app", "status"}, nil)
	descHoldExpiry = prometheus.NewDesc("reaper_app_hold_expiry_timestamp_seconds", "When the app's active keep-warm hold ends (Unix time); absent without one.",
		[]string{"app"}, nil)
	descHeld     = prometheus.NewDesc("reaper_held_requests", "Requests held for the app on this node now.", []string{"app"}, nil)
	descInFlight = prometheus.NewDesc("reaper_backend_in_flight", "Requests and connections (WebSocket, downloads) passing through to the app's backends from this node now.",
		[]string{"app"}, nil)
	descSavings = prometheus.NewDesc("reaper_savings_total", "Money the app's sleep saved, all time, at its current price (0 when unpriced).",
		[]string{"app", "currency"}, nil)
	descSavedSeconds = prometheus.NewDesc("reaper_saved_seconds_total", "Time the app spent asleep because reaper put it to sleep, all time.",
		[]string{"app"}, nil)
	descParked = prometheus.NewDesc("reaper_parked_requests", "Requests parked on this node (held off their goroutine).", nil, nil)
	descLeader = prometheus.NewDesc("reaper_leader", "1 on the cluster's leader, 0 elsewhere.", nil, nil)
	descTerm   = prometheus.NewDesc("reaper_raft_term", "This node's current Raft term.", nil, nil)
)

// WatchNode registers the collectors that read n at scrape time, and has every
// scrape create the series of the apps n's engine manages.
func (m *Metrics) WatchNode(n Node) {
	m.node.Store(&n)
	m.reg.MustRegister(nodeCollector{n}, groupCollector{n.Engine})
}

type nodeCollector struct{ n Node }

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStatus, descHoldExpiry, descHeld, descInFlight, descSavings, descSavedSeconds, descParked, descLeader, descTerm} {
		ch <- d
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, m := range c.n.Engine.Managed() {
		id := m.App.ID
		rec, ok := c.n.Engine.Record(id)
		if !ok {
			rec = reaper.Record{AppID: id, Status: reaper.StatusWaitingForInit}
		}
		ch <- prometheus.MustNewConstMetric(descStatus, prometheus.GaugeValue, 1, id, string(rec.Status))
		if rec.Hold.Active(now) {
			ch <- prometheus.MustNewConstMetric(descHoldExpiry, prometheus.GaugeValue, float64(rec.Hold.Until.UnixMilli())/1000, id)
		}
		held, inFlight := c.n.Engine.Held(id)
		ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(held), id)
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(inFlight), id)
		var cost paas.Cost
		if c.n.Pricer != nil {
			cost, _ = c.n.Pricer.Cost(ctx, m.App)
		}
		s := reaper.SavingsOf(rec, cost, now)
		// Unpriced (no price per hour, whatever currency the driver names):
		// "none", as docs/metrics.md says, so that a sum by currency never
		// mixes a price with nothing.
		currency := s.Currency
		if s.PricePerHour <= 0 || currency == "" {
			currency = "none"
		}
		ch <- prometheus.MustNewConstMetric(descSavings, prometheus.CounterValue, s.AllTime.Money, id, currency)
		ch <- prometheus.MustNewConstMetric(descSavedSeconds, prometheus.CounterValue, s.AllTime.AsleepSeconds, id)
	}
	if c.n.Parked != nil {
		ch <- prometheus.MustNewConstMetric(descParked, prometheus.GaugeValue, float64(c.n.Parked()))
	}
	if c.n.Raft != nil {
		leader, term := c.n.Raft()
		v := 0.0
		if leader {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, v)
		ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(term))
	}
}

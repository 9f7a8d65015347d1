// Package metrics is reaper's Prometheus instrumentation: a registry of its own
// (with the Go and process collectors), the gateway's request counters, the
// reaper's observer (held waits, wakes, sleeps, platform calls), and collectors
// that read the apps' records, the node's holds and the cluster at scrape time.
// Every label value comes from the configuration or a fixed list, never from a
// request: the number of series is bounded by the routes and apps configured.
// docs/metrics.md lists the metrics.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/webhook"
)

// Buckets of the request and held-wait histograms: from a fast proxied request
// to well past the longest fail timeouts (10 minutes), so that a held request
// and a stuck one fall in different buckets.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600, 900}

// wakeBuckets cover a wake's phases: milliseconds for a local process, minutes
// for a platform deployment.
var wakeBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600}

// Metrics holds the registry and the instruments. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	heldWait *prometheus.HistogramVec
	resent   *prometheus.CounterVec
	wakeDur  *prometheus.HistogramVec
	wakes    *prometheus.CounterVec
	sleeps   *prometheus.CounterVec
	paasN    *prometheus.CounterVec
	paasDur  *prometheus.HistogramVec
	asks     *prometheus.GaugeVec
	storeErr *prometheus.CounterVec
	webhooks *prometheus.CounterVec
	tcp      tcpInstruments
	trig     triggerInstruments

	driver string
	cells  sync.Map // requestKey → *requestCell
	// node is what WatchNode was given: the apps whose series each scrape
	// creates (zero.go).
	node atomic.Pointer[Node]
}

// requestKey is one series of the request metrics.
type requestKey struct{ route, class, answer string }

// requestCell is the resolved series of one requestKey.
type requestCell struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// New returns the metrics of a node whose platform driver is named driver.
func New(driver string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), driver: driver}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.requests = m.counterVec("reaper_requests_total", "Requests on routes, by the reaper's class of request and by how they were answered.", "route", "class", "answer")
	m.duration = m.histogramVec("reaper_request_duration_seconds", "Time from a request's arrival to the end of its answer.", durationBuckets, "route", "class")
	m.heldWait = m.histogramVec("reaper_held_wait_seconds", "Time a held request waited for its app before it was released or answered in its place.", durationBuckets, "app")
	m.resent = m.counterVec("reaper_held_resends_total", "Requests released from a hold sent to their app again, after their connection broke before any byte of the answer (an app that takes connections a moment before it serves them).", "app")
	m.wakeDur = m.histogramVec("reaper_wake_duration_seconds", "Length of each phase of a wake (start_accepted, platform_up, first_answer; total is from the ask to the first answer).", wakeBuckets, "app", "phase")
	m.wakes = m.counterVec("reaper_wakes_total", "Starts the platform accepted, by cause (request, keep_up, hold, other). Counted by the leader.", "app", "cause")
	m.sleeps = m.counterVec("reaper_sleeps_total", "Stops the platform accepted, by cause (idle, operator). Counted by the leader.", "app", "cause")
	m.paasN = m.counterVec("reaper_paas_calls_total", "Calls to the platform, by call and outcome. Made by the leader.", "driver", "call", "outcome")
	m.paasDur = m.histogramVec("reaper_paas_call_duration_seconds", "Length of calls to the platform.", prometheus.DefBuckets, "driver", "call")
	m.asks = m.gaugeVec("reaper_wake_asks_pending", "Wake asks pending at the leader's last pass (0 or 1 per app). Set by the leader.", "app")
	m.storeErr = m.counterVec("reaper_store_errors_total", "Store calls that failed, by operation.", "op")
	m.webhooks = m.counterVec("reaper_webhook_deliveries_total", "Webhook events by outcome: delivered, retried (an attempt failed), dropped (refused, too old, pushed out of a full queue).", "webhook", "outcome")
	m.tcp = m.tcpInstruments()
	m.trig = m.triggerInstruments()
	m.zeroDriver()
	return m
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(v)
	return v
}

func (m *Metrics) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(v)
	return v
}

func (m *Metrics) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(v)
	return v
}

// Registry is where collectors of the binary (the cluster's) register.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format, with the series
// of every app the node manages, 0 until they move (zero.go).
func (m *Metrics) Handler() http.Handler {
	return m.zeroing(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
}

// The request classes and answers, as labels.
const (
	classNone     = "none" // a route without the reaper plugin
	answerProxied = "proxied"
)

// ObserveRequest implements plugin.RequestObserver: one count and one duration
// per request. The series of a (route, class, answer) is resolved once.
func (m *Metrics) ObserveRequest(r plugin.RequestDone) {
	k := requestKey{route: r.Route, class: r.Class, answer: r.Outcome}
	if k.class == "" {
		k.class = classNone
	}
	if k.answer == "" {
		switch {
		case r.Status == 499:
			k.answer = reaper.OutcomeClientClosed
		case r.ByGateway && r.Status >= 500:
			k.answer = reaper.OutcomeError
		default:
			k.answer = answerProxied
		}
	}
	c, ok := m.cells.Load(k)
	if !ok {
		c, _ = m.cells.LoadOrStore(k, &requestCell{
			count:    m.requests.WithLabelValues(k.route, k.class, k.answer),
			duration: m.duration.WithLabelValues(k.route, k.class),
		})
	}
	cell := c.(*requestCell)
	cell.count.Inc()
	cell.duration.Observe(r.Duration.Seconds())
}

var _ plugin.RequestObserver = (*Metrics)(nil)
var _ reaper.Observer = (*Metrics)(nil)
var _ reaper.ResendObserver = (*Metrics)(nil)
var _ webhook.Observer = (*Metrics)(nil)

// HeldWait implements reaper.Observer.
func (m *Metrics) HeldWait(app string, d time.Duration) {
	m.heldWait.WithLabelValues(app).Observe(d.Seconds())
}

// HeldResent implements reaper.ResendObserver.
func (m *Metrics) HeldResent(app string) { m.resent.WithLabelValues(app).Inc() }

// WakePhase implements reaper.Observer.
func (m *Metrics) WakePhase(app, phase string, d time.Duration) {
	m.wakeDur.WithLabelValues(app, phase).Observe(d.Seconds())
}

// Woke implements reaper.Observer.
func (m *Metrics) Woke(app, cause string) { m.wakes.WithLabelValues(app, cause).Inc() }

// Slept implements reaper.Observer.
func (m *Metrics) Slept(app, cause string) { m.sleeps.WithLabelValues(app, cause).Inc() }

// PaaSCall implements reaper.Observer.
func (m *Metrics) PaaSCall(call, outcome string, d time.Duration) {
	m.paasN.WithLabelValues(m.driver, call, outcome).Inc()
	m.paasDur.WithLabelValues(m.driver, call).Observe(d.Seconds())
}

// AsksPending implements reaper.Observer.
func (m *Metrics) AsksPending(app string, n int) { m.asks.WithLabelValues(app).Set(float64(n)) }

// WebhookDelivery implements webhook.Observer.
func (m *Metrics) WebhookDelivery(webhook, outcome string) {
	m.webhooks.WithLabelValues(webhook, outcome).Inc()
}

// StoreError counts a failed store call (valkeystore.Options.OnError).
func (m *Metrics) StoreError(op string) { m.storeErr.WithLabelValues(op).Inc() }

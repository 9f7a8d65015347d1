package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The TCP routes' metrics (package tcproute): what its Observer is told, and
// its connections counted at scrape time. route comes from the configuration,
// ended from tcproute's fixed list.

type tcpInstruments struct {
	heldWait *prometheus.HistogramVec
	closed   *prometheus.CounterVec
	bytes    *prometheus.CounterVec
}

func (m *Metrics) tcpInstruments() tcpInstruments {
	return tcpInstruments{
		heldWait: m.histogramVec("reaper_tcp_held_wait_seconds", "Time a TCP connection was held while its app woke, before it was dialled or closed.", durationBuckets, "route"),
		closed:   m.counterVec("reaper_tcp_connections_closed_total", "TCP connections that ended, by how (closed, reset, idle, client_gone, fail_timeout, too_many_held, app_failed, dial_failed, shutdown).", "route", "ended"),
		bytes:    m.counterVec("reaper_tcp_bytes_total", "Bytes passed by TCP routes, in (client to app) and out, counted when each connection ends.", "route", "direction"),
	}
}

// TCPHeldWait implements tcproute.Observer.
func (m *Metrics) TCPHeldWait(route string, d time.Duration) {
	m.tcp.heldWait.WithLabelValues(route).Observe(d.Seconds())
}

// TCPConnectionEnded implements tcproute.Observer.
func (m *Metrics) TCPConnectionEnded(route, ended string, in, out int64) {
	m.tcp.closed.WithLabelValues(route, ended).Inc()
	m.tcp.bytes.WithLabelValues(route, "in").Add(float64(in))
	m.tcp.bytes.WithLabelValues(route, "out").Add(float64(out))
}

var descTCPConns = prometheus.NewDesc("reaper_tcp_connections", "TCP connections of the route on this node now: held (waiting for the app) or spliced (passing bytes).",
	[]string{"route", "state"}, nil)

// WatchTCP registers a collector of the TCP routes' connections; counts returns
// a route's held and spliced connections now.
func (m *Metrics) WatchTCP(routes []string, counts func(route string) (held, spliced int64)) {
	m.reg.MustRegister(tcpCollector{routes: routes, counts: counts})
	for _, r := range routes { // present before the first connection
		m.tcp.bytes.WithLabelValues(r, "in")
		m.tcp.bytes.WithLabelValues(r, "out")
	}
}

type tcpCollector struct {
	routes []string
	counts func(string) (int64, int64)
}

func (c tcpCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descTCPConns }

func (c tcpCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.routes {
		held, spliced := c.counts(r)
		ch <- prometheus.MustNewConstMetric(descTCPConns, prometheus.GaugeValue, float64(held), r, "held")
		ch <- prometheus.MustNewConstMetric(descTCPConns, prometheus.GaugeValue, float64(spliced), r, "spliced")
	}
}

package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reapergw/reaper/plugin"
)

// A request's answer label: the plugin's outcome, else how it ended.
func TestObserveRequest_Answers(t *testing.T) {
	for _, c := range []struct {
		done         plugin.RequestDone
		class, label string
	}{
		{plugin.RequestDone{Route: "r", Class: "api", Status: 200}, "api", "proxied"},
		{plugin.RequestDone{Route: "r", Class: "api", Status: 503}, "api", "proxied"}, // the app's own 503
		{plugin.RequestDone{Route: "r", Class: "api", Status: 502, ByGateway: true}, "api", "error"},
		{plugin.RequestDone{Route: "r", Class: "browser", Status: 499}, "browser", "client_closed"},
		{plugin.RequestDone{Route: "r", Class: "browser", Outcome: "waiting_page", Status: 503, ByGateway: true}, "browser", "waiting_page"},
		{plugin.RequestDone{Route: "r", Status: 200}, "none", "proxied"},
	} {
		m := New("process")
		c.done.Duration = 30 * time.Millisecond
		m.ObserveRequest(c.done)
		m.ObserveRequest(c.done)
		if got := testutil.ToFloat64(m.requests.WithLabelValues("r", c.class, c.label)); got != 2 {
			t.Errorf("%+v: reaper_requests_total{class=%q,answer=%q} = %v, want 2", c.done, c.class, c.label, got)
		}
		if n := testutil.CollectAndCount(m.requests); n != 1 {
			t.Errorf("%+v: %d series, want 1", c.done, n)
		}
	}
}

func TestRegistry_HasTheGoAndProcessCollectors(t *testing.T) {
	m := New("process")
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var goSeen, procSeen bool
	for _, mf := range mfs {
		goSeen = goSeen || strings.HasPrefix(mf.GetName(), "go_goroutines")
		procSeen = procSeen || strings.HasPrefix(mf.GetName(), "process_resident_memory_bytes")
	}
	if !goSeen || !procSeen {
		t.Errorf("go collector %v, process collector %v; want both", goSeen, procSeen)
	}
}

// BenchmarkObserveRequest is the metrics' cost on every request of the awake
// path: one count and one observation on resolved series.
func BenchmarkObserveRequest(b *testing.B) {
	m := New("process")
	d := plugin.RequestDone{Route: "hello", Class: "api", Status: 200, Duration: 3 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveRequest(d)
		}
	})
}

// Every metric this package defines is documented in docs/metrics.md.
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range []string{"metrics.go", "collect.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"(reaper_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
	}
	if len(names) < 19 {
		t.Fatalf("found %d metric names in the source, want them all (the pattern broke?)", len(names))
	}
	for n := range names {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("%s is not in docs/metrics.md", n)
		}
	}
}

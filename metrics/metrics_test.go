package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/reaper"
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
	for _, f := range []string{"metrics.go", "collect.go", "tcp.go", "trigger.go", "groups.go"} {
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

func TestTCP_ConnectionsBytesAndHeldWaits(t *testing.T) {
	m := New("process")
	held := map[string][2]int64{"pg": {3, 7}, "redis": {0, 1}}
	m.WatchTCP([]string{"pg", "redis"}, func(r string) (int64, int64) { return held[r][0], held[r][1] })
	m.TCPConnectionEnded("pg", "idle", 120, 4000)
	m.TCPConnectionEnded("pg", "closed", 30, 10)
	m.TCPHeldWait("pg", 1500*time.Millisecond)
	for _, c := range []struct {
		got, want float64
		what      string
	}{
		{testutil.ToFloat64(m.tcp.bytes.WithLabelValues("pg", "in")), 150, "bytes in"},
		{testutil.ToFloat64(m.tcp.bytes.WithLabelValues("pg", "out")), 4010, "bytes out"},
		{testutil.ToFloat64(m.tcp.bytes.WithLabelValues("redis", "in")), 0, "bytes in of a route without connections"},
		{testutil.ToFloat64(m.tcp.closed.WithLabelValues("pg", "idle")), 1, "reaped"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP reaper_tcp_connections TCP connections of the route on this node now: held (waiting for the app) or spliced (passing bytes).
# TYPE reaper_tcp_connections gauge
reaper_tcp_connections{route="pg",state="held"} 3
reaper_tcp_connections{route="pg",state="spliced"} 7
reaper_tcp_connections{route="redis",state="held"} 0
reaper_tcp_connections{route="redis",state="spliced"} 1
`), "reaper_tcp_connections"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.tcp.heldWait); n != 1 {
		t.Errorf("held wait series = %d", n)
	}
}

func TestTriggers_ChecksWakesFailingRefusals(t *testing.T) {
	m := New("process")
	m.WatchTriggers([]string{"queue"})
	if got := testutil.ToFloat64(m.trig.checks.WithLabelValues("queue", "error")); got != 0 {
		t.Fatalf("a watched trigger's errors start at %v, want 0", got)
	}
	m.TriggerChecked("queue", "none")
	m.TriggerChecked("queue", "error")
	m.TriggerChecked("queue", "error")
	if got := testutil.ToFloat64(m.trig.failing.WithLabelValues("queue")); got != 1 {
		t.Errorf("failing after an error: %v, want 1", got)
	}
	m.TriggerChecked("queue", "work")
	m.TriggerFired("queue")
	m.TriggerRefused("unauthorized")
	for _, c := range []struct {
		got, want float64
		what      string
	}{
		{testutil.ToFloat64(m.trig.checks.WithLabelValues("queue", "error")), 2, "errors"},
		{testutil.ToFloat64(m.trig.checks.WithLabelValues("queue", "work")), 1, "work"},
		{testutil.ToFloat64(m.trig.wakes.WithLabelValues("queue")), 1, "wakes"},
		{testutil.ToFloat64(m.trig.failing.WithLabelValues("queue")), 0, "failing once it works"},
		{testutil.ToFloat64(m.trig.refused.WithLabelValues("unauthorized")), 1, "refused"},
		{testutil.ToFloat64(m.trig.refused.WithLabelValues("rate_limited")), 0, "rate limited"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	m.TriggerChecked("queue", "error")
	m.TriggerStopped("queue")
	if got := testutil.ToFloat64(m.trig.failing.WithLabelValues("queue")); got != 0 {
		t.Errorf("failing once the trigger stopped here: %v, want 0", got)
	}
}

func TestGroups_MembersAndMembersUp(t *testing.T) {
	store, err := reaper.NewMemStore(reaper.MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := reaper.NewEngine(reaper.EngineOptions{Node: "n1", Store: store})
	e.SetTopology(reaper.Topology{Groups: []reaper.Group{{ID: "shop", Apps: []string{"web", "worker"}}}})
	e.Apply(reaper.Record{AppID: "web", Status: reaper.StatusUp, Revision: 1})
	e.Apply(reaper.Record{AppID: "worker", Status: reaper.StatusDown, Revision: 1})
	m := New("process")
	m.WatchNode(Node{Engine: e})
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP reaper_group_member 1 for each app of a group (groups[]): join it with reaper_app_status on app.
# TYPE reaper_group_member gauge
reaper_group_member{app="web",group="shop"} 1
reaper_group_member{app="worker",group="shop"} 1
# HELP reaper_group_members The apps of the group.
# TYPE reaper_group_members gauge
reaper_group_members{group="shop"} 2
# HELP reaper_group_members_up The group's apps that are Up, as this node last saw them.
# TYPE reaper_group_members_up gauge
reaper_group_members_up{group="shop"} 1
`), "reaper_group_member", "reaper_group_members", "reaper_group_members_up"); err != nil {
		t.Error(err)
	}
}

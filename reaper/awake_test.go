package reaper

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// noteRequest notes r as the reaper plugin does (Route.NoteAwake).
func noteRequest(w *appAwake, client netip.Addr, r *http.Request) {
	w.note(client, func() (string, string) { return r.URL.Path, r.Header.Get("User-Agent") })
}

// A flood of distinct clients never grows the counters past their bound, and
// cannot push out the client that really keeps the app awake.
func TestAppAwake_BoundedUnderAFloodOfDistinctClients(t *testing.T) {
	var w appAwake
	w.reset(dtNow)
	checker := netip.MustParseAddr("10.0.0.7")
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Header.Set("User-Agent", "kube-probe/1.31")
	flood := httptest.NewRequest("GET", "/", nil)
	for i := range 100_000 {
		if i%10 == 0 {
			noteRequest(&w, checker, req)
			continue
		}
		noteRequest(&w, netip.AddrFrom4([4]byte{172, 16, byte(i >> 8), byte(i)}), flood)
	}
	w.mu.Lock()
	sizes := []int{len(w.clients), len(w.paths), len(w.agents)}
	w.mu.Unlock()
	for _, n := range sizes {
		if n > AwakeKeys {
			t.Fatalf("counter sizes %v; want each at most %d", sizes, AwakeKeys)
		}
	}
	r := w.report("app", "n1", 3)
	// Its 10,000 requests, sampled past the first 4096 (one in 16 drawn at
	// random): about 600 samples, so the estimate is 10,000 ± 400 (one sigma);
	// 8,000 is five sigmas below.
	if r.Clients[0].Value != "10.0.0.7" || r.Clients[0].Count < 8_000 {
		t.Fatalf("top client %+v; want 10.0.0.7 with about its 10000 requests", r.Clients[0])
	}
	if !r.Sampled || r.Requests < 90_000 || r.Requests > 110_000 {
		t.Fatalf("requests %d, sampled %v; want about 100000, sampled", r.Requests, r.Sampled)
	}
	if r.Paths[0].Value != "/" || r.UserAgents[0].Value != "" {
		t.Fatalf("top path %+v, agent %+v", r.Paths[0], r.UserAgents[0])
	}
}

func TestAppAwake_ExactUntilSampling(t *testing.T) {
	var w appAwake
	w.reset(dtNow)
	req := httptest.NewRequest("GET", "/cron/run?x=1", nil)
	req.Header.Set("User-Agent", strings.Repeat("a", 500))
	for range 30 {
		noteRequest(&w, netip.MustParseAddr("::1"), req)
	}
	r := w.report("app", "n1", 10)
	if r.Sampled || r.Requests != 30 || r.Clients[0] != (AwakeCount{"::1", 30}) || r.Paths[0] != (AwakeCount{"/cron/run", 30}) {
		t.Fatalf("report %+v; want 30 exact requests from ::1 on /cron/run", r)
	}
	if len(r.UserAgents[0].Value) != awakeValueMax {
		t.Fatalf("user agent kept %d bytes, want %d", len(r.UserAgents[0].Value), awakeValueMax)
	}
	w.reset(dtNow.Add(time.Hour))
	if r := w.report("app", "n1", 10); r.Requests != 0 || len(r.Clients) != 0 || !r.Since.Equal(dtNow.Add(time.Hour)) {
		t.Fatalf("after a wake: %+v; want empty counters since the wake", r)
	}
}

func TestMergeAwake(t *testing.T) {
	a := AwakeReport{AppID: "x", Since: dtNow, Requests: 5, Nodes: []string{"n1"},
		Clients: []AwakeCount{{"1.1.1.1", 3}, {"2.2.2.2", 2}}, Paths: []AwakeCount{{"/", 5}}, UserAgents: []AwakeCount{{"curl", 5}}}
	b := AwakeReport{AppID: "x", Since: dtNow.Add(-time.Minute), Requests: 4, Sampled: true, Nodes: []string{"n2"},
		Clients: []AwakeCount{{"2.2.2.2", 4}}, Paths: []AwakeCount{{"/api", 4}}, UserAgents: []AwakeCount{{"curl", 4}}}
	m := MergeAwake([]AwakeReport{a, b}, 1)
	if m.Requests != 9 || !m.Sampled || !m.Since.Equal(b.Since) || len(m.Nodes) != 2 ||
		m.Clients[0] != (AwakeCount{"2.2.2.2", 6}) || len(m.Clients) != 1 || m.UserAgents[0] != (AwakeCount{"curl", 9}) {
		t.Fatalf("merged %+v", m)
	}
}

func TestEventLog_ReplayAfterAnIDAndDropTheSlow(t *testing.T) {
	var l eventLog
	for i := range EventReplay + 10 {
		l.publish(Transition{AppID: fmt.Sprint(i)}, 0)
	}
	recent, _, cancel := l.subscribe(0)
	cancel()
	if len(recent) != EventReplay || recent[0].ID != 11 || recent[len(recent)-1].ID != EventReplay+10 {
		t.Fatalf("late subscriber got %d events from %d; want the last %d", len(recent), recent[0].ID, EventReplay)
	}
	recent, _, cancel = l.subscribe(EventReplay + 8)
	cancel()
	if len(recent) != 2 || recent[0].ID != EventReplay+9 {
		t.Fatalf("after id %d: %+v; want the 2 after it", EventReplay+8, recent)
	}
	_, slow, cancel := l.subscribe(l.lastID)
	defer cancel()
	for range eventSubBuffer + 1 {
		l.publish(Transition{AppID: "x"}, 0)
	}
	n := 0
	for range slow {
		n++
	}
	if n != eventSubBuffer {
		t.Fatalf("a subscriber that never read got %d events then its channel closed? want %d then closed", n, eventSubBuffer)
	}
}

// The event stream over HTTP: the kept events first, then new ones as they
// come, in the server-sent events format.
func TestAdminAPI_EventStream(t *testing.T) {
	store, err := NewMemStore(MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	engine := NewEngine(EngineOptions{Node: "n1", Store: store})
	engine.events.publish(Transition{AppID: "a", From: StatusUp, To: StatusWaitingForShutdown, Cause: "idle for 1m0s"}, 61)
	srv := httptest.NewServer((&AdminAPI{Engine: engine, Store: store}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	next := func(prefix string) string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("stream ended before a %q line: %v", prefix, lines.Err())
		return ""
	}
	if l := next("data: "); !strings.Contains(l, `"to":"WaitingForShutdown"`) || !strings.Contains(l, `"seconds":61`) {
		t.Fatalf("first event %s; want the kept one", l)
	}
	engine.events.publish(Transition{AppID: "a", Kind: EventSleep, By: "ops"}, 0)
	if l := next("event: "); l != "event: sleep" {
		t.Fatalf("next event line %q, want event: sleep", l)
	}
	if l := next("data: "); !strings.Contains(l, `"id":2`) || !strings.Contains(l, `"by":"ops"`) {
		t.Fatalf("second event %s", l)
	}
}

func TestWakesOf_OneWakeItsFurthestEntry(t *testing.T) {
	w1 := &WakeTimes{AskedAt: dtNow, AcceptedAt: dtNow.Add(time.Second), UpAt: dtNow.Add(2 * time.Second)}
	w1n := *w1
	w1n.FirstAnswerAt = dtNow.Add(3 * time.Second)
	w2 := &WakeTimes{AskedAt: dtNow.Add(time.Hour), AcceptedAt: dtNow.Add(time.Hour + time.Second)}
	items := []Transition{ // newest first
		{Kind: EventWake, Phases: w2},
		{To: StatusUp},
		{Kind: EventWake, Phases: &w1n, Node: "n2"},
		{Kind: EventWake, Phases: w1, Node: "n1"},
	}
	got := wakesOf(items, 10)
	if len(got) != 2 || got[0].AskedAt != w2.AskedAt || got[1].Node != "n2" || got[1].Seconds != 3 || len(got[1].Phases) != 3 {
		t.Fatalf("wakes %+v; want the newer wake, then the older one as n2 saw it (3 phases, 3 s)", got)
	}
	if got := wakesOf(items, 1); len(got) != 1 {
		t.Fatalf("limit 1: %d wakes", len(got))
	}
}

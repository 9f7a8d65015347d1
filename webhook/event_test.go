package webhook

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reapergw/reaper/reaper"
)

var at0 = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

// wake is a wake asked at at0 whose platform took up and whose first answer
// came answer later (0: none yet).
func wake(up, answer time.Duration) *reaper.WakeTimes {
	w := &reaper.WakeTimes{AskedAt: at0, AcceptedAt: at0.Add(100 * time.Millisecond), UpAt: at0.Add(up)}
	if answer > 0 {
		w.FirstAnswerAt = w.UpAt.Add(answer)
	}
	return w
}

func TestTypesOf(t *testing.T) {
	status := func(from, to reaper.Status, w *reaper.WakeTimes) reaper.Transition {
		return reaper.Transition{AppID: "a", From: from, To: to, Phases: w}
	}
	kind := func(k string, w *reaper.WakeTimes) reaper.Transition {
		return reaper.Transition{AppID: "a", From: reaper.StatusUp, To: reaper.StatusUp, Kind: k, Phases: w}
	}
	const alert = time.Minute
	for _, c := range []struct {
		name  string
		t     reaper.Transition
		alert time.Duration
		want  []string
	}{
		{"a change of status", status(reaper.StatusUp, reaper.StatusWaitingForShutdown, nil), alert, []string{"status"}},
		{"a change to Error", status(reaper.StatusWaitingForUp, reaper.StatusError, nil), alert, []string{"error"}},
		{"up in time", status(reaper.StatusWaitingForUp, reaper.StatusUp, wake(30*time.Second, 0)), alert, []string{"status"}},
		{"up after the alert", status(reaper.StatusWaitingForUp, reaper.StatusUp, wake(90*time.Second, 0)), alert, []string{"status", "slow_wake"}},
		{"up late, no alert set", status(reaper.StatusWaitingForUp, reaper.StatusUp, wake(90*time.Second, 0)), 0, []string{"status"}},
		{"answered in time", kind(reaper.EventWake, wake(30*time.Second, time.Second)), alert, []string{"wake"}},
		{"answered late, the platform in time", kind(reaper.EventWake, wake(59*time.Second, 2*time.Second)), alert, []string{"wake", "slow_wake"}},
		{"answered late, the platform late too (told at Up)", kind(reaper.EventWake, wake(90*time.Second, time.Second)), alert, []string{"wake"}},
		{"the leader's phases at Up", kind(reaper.EventWake, wake(90*time.Second, 0)), alert, nil},
		{"hold", kind(reaper.EventHold, nil), alert, []string{"hold"}},
		{"release", kind(reaper.EventRelease, nil), alert, []string{"release"}},
		{"hold expired", kind(reaper.EventHoldExpired, nil), alert, []string{"hold_expired"}},
		{"sleep", kind(reaper.EventSleep, nil), alert, []string{"sleep"}},
		{"wake asked", kind(reaper.EventWakeAsk, nil), alert, []string{"wake_ask"}},
		{"settings", kind(reaper.EventSettings, nil), alert, nil},
	} {
		if got := typesOf(c.t, c.alert); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestWants(t *testing.T) {
	for _, c := range []struct {
		filter []string
		typ    string
		want   bool
	}{
		{nil, "hold", true},
		{[]string{"status"}, "status", true},
		{[]string{"status"}, "error", true},
		{[]string{"error"}, "status", false},
		{[]string{"error"}, "error", true},
		{[]string{"hold", "release"}, "hold_expired", false},
	} {
		if got := wants(set(c.filter), c.typ); got != c.want {
			t.Errorf("filter %q, type %s: %v, want %v", c.filter, c.typ, got, c.want)
		}
	}
}

// Ids are UUIDv7; the wake's events have the same id on every node.
func TestEventID(t *testing.T) {
	hold := reaper.Transition{AppID: "a", Kind: reaper.EventHold, At: at0}
	a, b := eventID(hold, TypeHold), eventID(hold, TypeHold)
	if a == b {
		t.Errorf("two holds got one id %s", a)
	}
	w := reaper.Transition{AppID: "a", Kind: reaper.EventWake, Phases: wake(time.Second, time.Second)}
	n1, n2 := w, w
	n1.Node, n2.Node = "n1", "n2"
	n2.Phases = wake(time.Second, 2*time.Second) // answered a moment later there
	id1, id2 := eventID(n1, TypeWake), eventID(n2, TypeWake)
	if id1 != id2 {
		t.Errorf("one wake told by two nodes got two ids: %s, %s", id1, id2)
	}
	if slow := eventID(n1, TypeSlowWake); slow == id1 {
		t.Errorf("the wake and the slow wake share the id %s", slow)
	}
	other := w
	other.AppID = "b"
	if eventID(other, TypeWake) == id1 {
		t.Errorf("two apps' wakes share an id")
	}
	for _, s := range []string{a, id1} {
		u, err := uuid.Parse(s)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Errorf("%s: version %v variant %v err %v; want a UUIDv7", s, u.Version(), u.Variant(), err)
		}
	}
	u, _ := uuid.Parse(id1)
	if sec, nsec := u.Time().UnixTime(); !time.Unix(sec, nsec).Equal(at0) {
		t.Errorf("derived id's time %v, want the ask's %v", time.Unix(sec, nsec).UTC(), at0)
	}
}

func TestEncode_JSON(t *testing.T) {
	ev := newEvent(reaper.Transition{AppID: "app_1", From: reaper.StatusWaitingForUp, To: reaper.StatusUp, Cause: "woken by a request",
		At: at0.Add(3 * time.Second), Node: "n1", Phases: wake(3*time.Second, 0)}, TypeStatus, "web", at0)
	raw, err := encode(FormatJSON, ev, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	w, _ := got["wake"].(map[string]any)
	if got["id"] != ev.ID || got["type"] != "status" || got["app_id"] != "app_1" || got["app_name"] != "web" ||
		got["from"] != "WaitingForUp" || got["to"] != "Up" || got["at"] != "2025-03-14T09:00:03Z" || got["node"] != "n1" ||
		w["total_seconds"] != 3.0 || w["asked_at"] != "2025-03-14T09:00:00Z" || len(w["phases"].([]any)) != 2 {
		t.Errorf("body = %s", raw)
	}
	for _, k := range []string{"kind", "queued_at", "phases"} {
		if _, ok := got[k]; ok {
			t.Errorf("body has %q, an internal field: %s", k, raw)
		}
	}
}

func TestEncode_Slack(t *testing.T) {
	hold := &reaper.KeepWarm{Until: at0.Add(5 * time.Hour), Reason: "nightly backup", By: "ops", Since: at0}
	ev := func(typ string, tr reaper.Transition) reaper.QueuedEvent {
		tr.AppID = "app_1"
		return newEvent(tr, typ, "db", at0)
	}
	for _, c := range []struct {
		ev   reaper.QueuedEvent
		want string
	}{
		{ev(TypeWake, reaper.Transition{Kind: reaper.EventWake, Phases: wake(2*time.Second, 300*time.Millisecond)}), "db woke up in 2.3 s (asked → first answer)"},
		{ev(TypeSlowWake, reaper.Transition{Kind: reaper.EventWake, Phases: wake(75*time.Second, 0)}), "db was slow to wake: 75.0 s (asked → platform up), more than alert_wake_after (1m0s)"},
		{ev(TypeError, reaper.Transition{To: reaper.StatusError, Cause: "start failed: deployment FAIL"}), "db went to Error: start failed: deployment FAIL"},
		{ev(TypeHold, reaper.Transition{Kind: reaper.EventHold, By: "ops", Hold: hold}), "db held awake until 2025-03-14 14:00 UTC by ops: nightly backup"},
		{ev(TypeRelease, reaper.Transition{Kind: reaper.EventRelease, By: "ops", Hold: hold}), "db's hold released by ops"},
		{ev(TypeHoldExpired, reaper.Transition{Kind: reaper.EventHoldExpired, By: "ops", Hold: hold}), "db's hold by ops ran out: nightly backup"},
		{ev(TypeSleep, reaper.Transition{Kind: reaper.EventSleep, By: "alice"}), "db put to sleep by alice"},
		{ev(TypeWakeAsk, reaper.Transition{Kind: reaper.EventWakeAsk, By: "alice"}), "db asked to wake by alice"},
		{ev(TypeStatus, reaper.Transition{From: reaper.StatusUp, To: reaper.StatusWaitingForShutdown, Cause: "idle for 15m0s"}), "db: Up → WaitingForShutdown (idle for 15m0s)"},
		{ev(TypeStatus, reaper.Transition{From: reaper.StatusWaitingForUp, To: reaper.StatusUp, Cause: "woken", Phases: wake(2*time.Second, 0)}), "db: WaitingForUp → Up (woken), up 2.0 s after the ask"},
		{ev(TypeHold, reaper.Transition{Kind: reaper.EventHold}), "db held awake until 0001-01-01 00:00 UTC"}, // a hold lost on the way: no panic
	} {
		raw, err := encode(FormatSlack, c.ev, time.Minute)
		var got map[string]string
		if err != nil || json.Unmarshal(raw, &got) != nil || len(got) != 1 {
			t.Fatalf("%s: %s, %v; want {\"text\": …}", c.ev.Type, raw, err)
		}
		if got["text"] != c.want {
			t.Errorf("%s: %q, want %q", c.ev.Type, got["text"], c.want)
		}
		if strings.Contains(got["text"], "app_1") {
			t.Errorf("%s: the text names the app by its id when it has a name", c.ev.Type)
		}
	}
}

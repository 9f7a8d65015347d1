package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func TestShort(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {400 * time.Millisecond, "0s"}, {600 * time.Millisecond, "1s"}, {45 * time.Second, "45s"},
		{time.Minute, "1m"}, {3*time.Minute + 20*time.Second, "3m20s"}, {2*time.Hour + 5*time.Minute + 9*time.Second, "2h5m"},
		{6 * time.Hour, "6h"}, {24 * time.Hour, "1d"}, {76*time.Hour + 59*time.Minute, "3d4h"}, {-90 * time.Second, "1m30s"},
	} {
		if got := short(c.d); got != c.want {
			t.Errorf("short(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestAgo(t *testing.T) {
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	for _, c := range []struct {
		t    *time.Time
		want string
	}{
		{nil, "-"}, {&time.Time{}, "-"}, {at(0), "now"}, {at(-500 * time.Millisecond), "now"},
		{at(-3 * time.Minute), "3m ago"}, {at(12 * time.Minute), "in 12m"}, {at(-26 * time.Hour), "1d2h ago"},
	} {
		if got := ago(c.t, t0); got != c.want {
			t.Errorf("ago(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

func TestSecondsAndMoney(t *testing.T) {
	for in, want := range map[float64]string{0.042: "42ms", 2.34: "2.3s", 65: "1m5s"} {
		if got := seconds(in); got != want {
			t.Errorf("seconds(%v) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		v        float64
		currency string
		want     string
	}{{12.345, "EUR", "12.35 EUR"}, {-0.001, "EUR", "0.00 EUR"}, {3, "", "3.00"}} {
		if got := money(c.v, c.currency); got != c.want {
			t.Errorf("money(%v, %q) = %q, want %q", c.v, c.currency, got, c.want)
		}
	}
}

func TestHoldTextAndChange(t *testing.T) {
	h := &reaper.KeepWarm{Until: t0.Add(6 * time.Hour), By: "alice", Reason: "backup", Since: t0}
	for _, c := range []struct{ got, want string }{
		{holdText(nil, t0), "-"},
		{holdText(h, t0), "until in 6h (alice: backup)"},
		{holdText(&reaper.KeepWarm{Until: t0.Add(time.Hour)}, t0), "until in 1h"},
		{change(reaper.StatusDown, reaper.StatusWaitingForUp), "Down → WaitingForUp"},
		{change(reaper.StatusUp, reaper.StatusUp), "Up"},
		{change("", reaper.StatusDown), "→ Down"},
		{phasesText(2.5, []reaper.PhaseDuration{{Phase: "start_accepted", Seconds: 0.1}, {Phase: "platform_up", Seconds: 2.4}}),
			"2.5s: start_accepted 100ms, platform_up 2.4s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestExitFor(t *testing.T) {
	for status, want := range map[int]int{400: exitRefused, 401: exitRefused, 403: exitRefused, 404: exitNotFound,
		409: exitConflict, 500: exitUnreachable, 503: exitUnreachable} {
		if got := exitFor(status); got != want {
			t.Errorf("exitFor(%d) = %d, want %d", status, got, want)
		}
	}
	for body, want := range map[string]string{`{"error": "no app \"x\""}`: `no app "x"`, "oops\n": "oops", "": "no message"} {
		if got := apiError([]byte(body)); got != want {
			t.Errorf("apiError(%q) = %q, want %q", body, got, want)
		}
	}
}

func TestPrintApps_AlignsColumns(t *testing.T) {
	up, access, reap := t0.Add(-3*time.Minute), t0.Add(-20*time.Second), t0.Add(12*time.Minute)
	var b bytes.Buffer
	printApps(&b, []reaper.AppView{
		{AppID: "a-long-app-id", Status: reaper.StatusUp, LastStatusUpdate: &up, LastAccess: &access, ReapAt: &reap, InFlight: 2, Managed: true, Cause: "woke up"},
		{AppID: "db", Status: reaper.StatusError, ErrorCause: "start refused", Managed: false},
	}, t0)
	want := `APP            STATUS  SINCE   LAST ACCESS  SLEEPS  IN FLIGHT  HOLD  CAUSE
a-long-app-id  Up      3m ago  20s ago      in 12m  2          -     woke up
db             Error   -       -            -       -          -     (no route) start refused
`
	if b.String() != want {
		t.Errorf("printApps:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestEventLine(t *testing.T) {
	now := t0.Add(time.Minute)
	wake := &reaper.WakeTimes{AskedAt: t0.Add(-2 * time.Second), AcceptedAt: t0.Add(-1900 * time.Millisecond), UpAt: t0}
	for _, c := range []struct {
		ev   reaper.Event
		want string
	}{
		{reaper.Event{Type: "status", Seconds: 130, Transition: reaper.Transition{AppID: "hello", From: "Down", To: "WaitingForUp",
			Cause: "woken by a request", At: t0}},
			t0.Local().Format(time.TimeOnly) + "  hello        status    Down → WaitingForUp            woken by a request (after 2m10s in Down)"},
		{reaper.Event{Type: "hold", Transition: reaper.Transition{AppID: "db", From: "Up", To: "Up", At: t0, By: "alice", Node: "n1",
			Hold: &reaper.KeepWarm{Until: t0.Add(time.Hour), Reason: "backup"}}},
			t0.Local().Format(time.TimeOnly) + "  db           hold      Up                             backup (until " + t0.Add(time.Hour).Local().Format(time.DateTime) + ") by alice [n1]"},
		{reaper.Event{Type: "wake", Seconds: 2, Transition: reaper.Transition{AppID: "hello", From: "Up", To: "Up", At: t0.Add(-48 * time.Hour), Phases: wake}},
			t0.Add(-48*time.Hour).Local().Format(time.DateTime) + "  hello        wake      Up                             woke in 2.0s: start_accepted 100ms, platform_up 1.9s"},
	} {
		if got := eventLine(c.ev, now); got != c.want {
			t.Errorf("eventLine:\n got %q\nwant %q", got, c.want)
		}
	}
}

func TestReadSSE(t *testing.T) {
	stream := "retry: 2000\n\n: keep-alive\n\nid: 7\nevent: status\ndata: {\"a\":1}\n\nid: 8\ndata:x\ndata: y\n\n"
	var got []string
	err := readSSE(strings.NewReader(stream), func(id string, data []byte) { got = append(got, id+"="+string(data)) })
	if err != nil || strings.Join(got, "|") != `7={"a":1}|8=x`+"\n"+"y" {
		t.Errorf("readSSE = %q, %v", got, err)
	}
}

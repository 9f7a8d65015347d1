package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// t0 is the start of the synthetic schedules.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

const appA = "app_00000000-0000-4000-8000-000000000001"

// obs is a schedule of one app with the given calls, hits, results and faults.
func obs() *observation {
	return &observation{start: t0, end: sec(300), apps: []worldApp{{id: appA, hold: "h0.test"}},
		lines: [][]sample{nil}, history: [][]transition{nil}, converged: convergence{ok: true}}
}

func (o *observation) call(method string, at float64, state string) *observation {
	o.calls = append(o.calls, fakeclever.Call{Method: method, Path: "/v2/organisations/orga_x/applications/" + appA + "/instances",
		App: appA, At: sec(at), Status: 200, State: state})
	return o
}

func (o *observation) fault(kind faultKind, node int, from, to float64) *observation {
	o.injections = append(o.injections, injection{fault: fault{kind: kind}, node: node, app: 0, at: sec(from), end: sec(to)})
	return o
}

func judge(fn func(*observation, *checkResult), o *observation) checkResult {
	var c checkResult
	fn(o, &c)
	return c
}

func TestCheckStarts_WhileUpAndTwiceForOneNeed(t *testing.T) {
	o := obs().call(http.MethodPost, 1, fakeclever.StateShouldBeDown).call(http.MethodPost, 9, fakeclever.StateShouldBeUp)
	if c := judge(checkNoStartWhileUp, o); c.checked != 2 || len(c.violations) != 1 || !strings.Contains(c.violations[0], "SHOULD_BE_UP") {
		t.Errorf("start while up: %+v", c)
	}
	if c := judge(checkOneStartPerNeed, o); len(c.violations) != 1 {
		t.Errorf("two starts, no stop: %+v", c)
	}
	if c := judge(checkOneStartPerNeed, o.call(http.MethodDelete, 5, fakeclever.StateShouldBeUp)); len(c.violations) != 0 {
		t.Errorf("a stop in between: %+v", c)
	}
	crashed := obs().call(http.MethodPost, 1, fakeclever.StateShouldBeDown).call(http.MethodPost, 9, fakeclever.StateShouldBeDown).fault(kindAppCrash, -1, 4, 4)
	if c := judge(checkOneStartPerNeed, crashed); len(c.violations) != 0 {
		t.Errorf("a crash in between: %+v", c)
	}
}

func TestCheckStops_InFlightAndUnderTraffic(t *testing.T) {
	o := obs().call(http.MethodDelete, 20, fakeclever.StateShouldBeUp)
	o.hits = []appHit{
		{id: "r1", path: "/download", arrived: sec(18), ended: sec(22)},              // at the app during the stop
		{id: "r2", path: "/api/r2", arrived: sec(16), ended: sec(16.1)},              // 3.9 s before: within the grace
		{id: "r3", path: "/health", arrived: sec(19), ended: sec(21), monitor: true}, // a monitor: not traffic
		{id: "r4", path: "/api/r4", arrived: sec(10), ended: sec(10.1)},              // long before
	}
	o.results = []result{{id: "r1", node: 0}, {id: "r2", node: 1}, {id: "r3", node: 0}, {id: "r4", node: 0}}
	if c := judge(checkNoStopInFlight, o); len(c.violations) != 1 || !strings.Contains(c.violations[0], "r1") {
		t.Errorf("in flight: %+v", c)
	}
	if c := judge(checkNoStopUnderTraffic, o); len(c.violations) != 1 || !strings.Contains(c.violations[0], "r2") {
		t.Errorf("under traffic: %+v", c)
	}
	// n1 killed while r1 streamed, n2 killed before it flushed r2's end: excused.
	o.fault(kindFollowerKill, 0, 19, 23).fault(kindLeaderKill, 1, 17, 19)
	if c := judge(checkNoStopInFlight, o); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("in flight, excused: %+v", c)
	}
	if c := judge(checkNoStopUnderTraffic, o); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("under traffic, excused: %+v", c)
	}
}

func TestCheckHeld_AnsweredAndBounded(t *testing.T) {
	app := result{id: "r1", kind: kindAPIHold, sent: sec(1), headers: sec(2), end: sec(2), status: 200, fromApp: true, appOK: true}
	timeout := result{id: "r2", kind: kindPost, sent: sec(1), headers: sec(21), end: sec(21), status: 504, marker: "Down", errorText: "the application did not wake up in time"}
	dropped := result{id: "r3", kind: kindAPIHold, node: 1, sent: sec(1), end: sec(5), err: "EOF"}
	late := result{id: "r4", kind: kindDownload, sent: sec(1), headers: sec(30), end: sec(31), status: 200, fromApp: true, appOK: true}
	o := obs()
	o.results = []result{app, timeout, dropped, late}
	if c := judge(checkHeldAnswered, o); c.checked != 4 || len(c.violations) != 1 || !strings.Contains(c.violations[0], "r3") {
		t.Errorf("answered: %+v", c)
	}
	if c := judge(checkHeldBounded, o); len(c.violations) != 1 || !strings.Contains(c.violations[0], "r4") {
		t.Errorf("bounded: %+v", c)
	}
	// Killed: excused. Stopped by SIGTERM while holding it: it needed its 503.
	if c := judge(checkHeldAnswered, obsWith(o.results).fault(kindFollowerKill, 1, 3, 6)); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("killed: %+v", c)
	}
	if c := judge(checkHeldAnswered, obsWith(o.results).fault(kindNodeTerm, 1, 3, 6)); len(c.violations) != 1 || !strings.Contains(c.violations[0], "SIGTERM") {
		t.Errorf("SIGTERM: %+v", c)
	}
	if c := judge(checkHeldAnswered, obsWith(o.results).fault(kindPartition, 1, 3, 6)); len(c.violations) != 1 || !strings.Contains(c.violations[0], "cut off") {
		t.Errorf("partition: %+v", c)
	}
	// Cut off, then killed: the kill ended it.
	if c := judge(checkHeldAnswered, obsWith(o.results).fault(kindPartition, 1, 2, 3).fault(kindFollowerKill, 1, 4.9, 8)); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("partition, then a kill: %+v", c)
	}
}

func obsWith(rs []result) *observation {
	o := obs()
	o.results = rs
	return o
}

func TestCheckNo502_AndOtherAnswers(t *testing.T) {
	o := obsWith([]result{
		{id: "r1", kind: kindAPIHold, node: 2, sent: sec(1), headers: sec(1), end: sec(1), status: 502},
		{id: "r2", kind: kindMonitor, sent: sec(1), headers: sec(1), status: 200, marker: "Down", monitoring: true},
		{id: "r3", kind: kindBrowser, sent: sec(1), headers: sec(1), status: 503, marker: "Down", contentType: "text/html; charset=utf-8", retryAfter: "30"},
		{id: "r4", kind: kindAPIUnavailable, sent: sec(1), headers: sec(1), status: 503, marker: "Down", errorText: "the application is waking up, retry later"},
		{id: "r5", kind: kindBrowser, sent: sec(1), headers: sec(1), status: 200, marker: "Up"},
	})
	if c := judge(checkNo502, o); c.checked != 5 || len(c.violations) != 1 {
		t.Errorf("502: %+v", c)
	}
	if c := judge(checkNo502, o.fault(kindPartition, 2, 0, 3)); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("502 from a node cut off: %+v", c)
	}
	c := judge(checkOtherAnswers, o)
	if c.checked != 4 || len(c.violations) != 2 || !strings.Contains(c.violations[0], "r4") || !strings.Contains(c.violations[1], "r5") {
		t.Errorf("other answers (r4 lacks Retry-After, r5 is no documented answer): %+v", c)
	}
}

func TestCheckBodies_IntactOnceAndNeverAfterTheGatewaysAnswer(t *testing.T) {
	o := obsWith([]result{{id: "r1", kind: kindPost, status: 504, marker: "Down"}, {id: "r2", kind: kindPost, fromApp: true, appOK: true}})
	o.hits = []appHit{
		{id: "r1", path: "/post", bodyOK: true},
		{id: "r2", path: "/post", bodyOK: true},
		{id: "r2", path: "/post", bodyOK: true},
		{id: "r3", path: "/post", bodyOK: false},
	}
	c := judge(checkBodies, o)
	if c.checked != 4 || len(c.violations) != 3 {
		t.Fatalf("%+v", c)
	}
	for i, want := range []string{"r1 reached app 0 at", "r2 reached app 0 twice", "r3 reached app 0 at"} {
		if !strings.Contains(c.violations[i], want) {
			t.Errorf("violation %d: %q, want %q", i, c.violations[i], want)
		}
	}
}

func TestCheckAsksServed(t *testing.T) {
	up := sample{state: fakeclever.StateShouldBeUp, serving: true, action: fakeclever.ActionDeploy, depl: fakeclever.DeploymentOK}
	down := sample{state: fakeclever.StateShouldBeDown}
	ask := result{id: "r1", kind: kindAPIUnavailable, sent: sec(10), status: 503, marker: "Down"}
	o := obsWith([]result{ask})
	o.lines[0] = []sample{at(down, 0), at(up, 12)}
	if c := judge(checkAsksServed, o); c.checked != 1 || len(c.violations) != 0 {
		t.Errorf("woken: %+v", c)
	}
	// Asked while the app was being stopped (up at the ask): it must come up
	// after the stop, which it never does.
	stopping := sample{state: fakeclever.StateShouldBeUp, serving: true, action: fakeclever.ActionUndeploy, depl: fakeclever.DeploymentWIP}
	o.lines[0] = []sample{at(up, 0), at(stopping, 10.55), at(down, 11)}
	o.call(http.MethodDelete, 10.5, fakeclever.StateShouldBeUp)
	if c := judge(checkAsksServed, o); len(c.violations) != 1 {
		t.Errorf("asked during the stop, never woken: %+v", c)
	}
	o.history[0] = []transition{{From: "WaitingForUp", To: "Error", Cause: "start timed out", At: sec(30)}}
	if c := judge(checkAsksServed, o); len(c.violations) != 0 {
		t.Errorf("an Error with its cause: %+v", c)
	}
	o.history[0], o.end = nil, sec(20)
	if c := judge(checkAsksServed, o); len(c.violations) != 0 || c.undecided != 1 {
		t.Errorf("the observation ended too soon: %+v", c)
	}
}

func at(s sample, secs float64) sample {
	s.at = sec(secs)
	return s
}

func TestUpBetween(t *testing.T) {
	up := sample{state: fakeclever.StateShouldBeUp, serving: true, action: fakeclever.ActionDeploy, depl: fakeclever.DeploymentOK}
	stopping := sample{state: fakeclever.StateShouldBeUp, serving: true, action: fakeclever.ActionUndeploy, depl: fakeclever.DeploymentWIP}
	down := sample{state: fakeclever.StateShouldBeDown}
	line := []sample{at(up, 0), at(stopping, 5), at(down, 6), at(up, 20)}
	for _, tt := range []struct {
		from, to float64
		want     bool
		first    float64
	}{{1, 2, true, 1}, {5, 19, false, 0}, {5.5, 21, true, 20}, {25, 30, true, 25}} {
		got, ok := upBetween(line, sec(tt.from), sec(tt.to))
		if ok != tt.want || ok && !got.Equal(sec(tt.first)) {
			t.Errorf("upBetween(%v, %v) = %v, %v; want %v at %v", tt.from, tt.to, got.Sub(t0), ok, tt.want, tt.first)
		}
	}
}

func TestCheckNoWakeByMonitors(t *testing.T) {
	o := obs().call(http.MethodPost, 40, fakeclever.StateShouldBeDown)
	o.results = []result{{id: "m1", kind: kindMonitor, sent: sec(39)}, {id: "r1", kind: kindBrowser, sent: sec(5)}}
	if c := judge(checkNoWakeByMonitors, o); len(c.violations) != 1 || !strings.Contains(c.violations[0], "monitors'") {
		t.Errorf("woken with monitors only (the browser was 35 s before): %+v", c)
	}
	o.results = append(o.results, result{id: "r2", kind: kindAPIHold, sent: sec(38)})
	if c := judge(checkNoWakeByMonitors, o); c.checked != 1 || len(c.violations) != 0 {
		t.Errorf("woken by an API call: %+v", c)
	}
}

func TestCheckNoTimeoutWhileUp(t *testing.T) {
	up := sample{state: fakeclever.StateShouldBeUp, serving: true, action: fakeclever.ActionDeploy, depl: fakeclever.DeploymentOK}
	down := sample{state: fakeclever.StateShouldBeDown}
	timedOut := result{id: "r1", kind: kindAPIHold, sent: sec(1), headers: sec(21), end: sec(21), status: 504, marker: "WaitingForUp",
		errorText: "the application did not wake up in time"}
	o := obsWith([]result{timedOut})
	o.lines[0] = []sample{at(down, 0), at(up, 19)} // up too late to be released
	if c := judge(checkNoTimeoutWhileUp, o); c.checked != 1 || len(c.violations) != 0 {
		t.Errorf("up 2 s before the 504: %+v", c)
	}
	o.lines[0] = []sample{at(down, 0), at(up, 3)}
	if c := judge(checkNoTimeoutWhileUp, o); len(c.violations) != 1 || !strings.Contains(c.violations[0], "up from 3.00s") {
		t.Errorf("up 18 s before the 504: %+v", c)
	}
	if c := judge(checkNoTimeoutWhileUp, o.fault(kindRedis, -1, 5, 7)); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("redis-server down meanwhile: %+v", c)
	}
}

func TestCheckNoStopWithHeld(t *testing.T) {
	o := obs().call(http.MethodDelete, 20, fakeclever.StateShouldBeUp)
	o.history[0] = []transition{{From: "Up", To: "WaitingForShutdown", At: sec(17.5)}}
	o.results = []result{
		{id: "r1", kind: kindAPIHold, sent: sec(15), headers: sec(24), end: sec(24), status: 200, fromApp: true, appOK: true},  // held across the stop
		{id: "r2", kind: kindAPIHold, sent: sec(18), headers: sec(24), end: sec(24), status: 200, fromApp: true, appOK: true},  // came after the mark
		{id: "r3", kind: kindDownload, sent: sec(15), headers: sec(15), end: sec(21), status: 200, fromApp: true, appOK: true}, // answered before
	}
	o.hits = []appHit{{id: "r1", arrived: sec(23.9)}, {id: "r2", arrived: sec(23.9)}}
	if c := judge(checkNoStopWithHeld, o); c.checked != 1 || len(c.violations) != 1 || !strings.Contains(c.violations[0], "r1") {
		t.Errorf("%+v", c)
	}
	o.history[0] = nil
	if c := judge(checkNoStopWithHeld, o); len(c.violations) != 0 || c.undecided != 1 {
		t.Errorf("no mark in the history: %+v", c)
	}
}

func TestCheckNo502_ExcusedJustAfterAPartitionHeals(t *testing.T) {
	o := obsWith([]result{{id: "r1", kind: kindMonitor, node: 1, sent: sec(12), headers: sec(15), end: sec(15), status: 502}})
	if c := judge(checkNo502, o.fault(kindPartition, 1, 5, 9)); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("3 s after the heal: %+v", c)
	}
	o = obsWith([]result{{id: "r1", kind: kindMonitor, node: 1, sent: sec(20), headers: sec(20), end: sec(20), status: 502}})
	if c := judge(checkNo502, o.fault(kindPartition, 1, 5, 9)); len(c.violations) != 1 {
		t.Errorf("11 s after the heal: %+v", c)
	}
}

// A killed follower that /api/cluster never showed unreachable, or showed too
// late, is a violation; one shown in time is not; a fault that did not strike
// is not checked.
func TestCheckDeadNodeShown(t *testing.T) {
	start := time.Now()
	kill := func(at, shown time.Duration, skipped string) injection {
		inj := injection{fault: fault{kind: kindOperatorKill}, at: start.Add(at), node: 1, skipped: skipped}
		if shown >= 0 {
			inj.shown = start.Add(shown)
		}
		return inj
	}
	o := &observation{start: start, injections: []injection{
		kill(time.Second, 1200*time.Millisecond, ""),                    // shown after 0.2 s
		kill(10*time.Second, -1, ""),                                    // never shown
		kill(20*time.Second, 20*time.Second+shownBound+time.Second, ""), // too late
		kill(30*time.Second, -1, "no leader known"),                     // did not strike
	}}
	var c checkResult
	checkDeadNodeShown(o, &c)
	if c.checked != 3 || len(c.violations) != 2 {
		t.Fatalf("checked %d, violations %q; want 3 checked, 2 violations (never shown, too late)", c.checked, c.violations)
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestKillSchedule_OneKillInEachSliceOfTheWindow(t *testing.T) {
	window := 600 * time.Millisecond
	for _, n := range []int{1, 5, 50} {
		s := killSchedule(7, n, window)
		if !slices.Equal(s, killSchedule(7, n, window)) {
			t.Fatalf("n=%d: the same seed gave two schedules", n)
		}
		sorted := slices.Sorted(slices.Values(s))
		for i, d := range sorted {
			lo, hi := window*time.Duration(i)/time.Duration(n), window*time.Duration(i+1)/time.Duration(n)
			if d < lo || d > hi {
				t.Errorf("n=%d: the %d-th kill at %v, want one in [%v, %v]", n, i, d, lo, hi)
			}
		}
	}
	if a, b := killSchedule(7, 50, window), killSchedule(8, 50, window); slices.Equal(a, b) {
		t.Error("two seeds gave the same schedule")
	}
	if s := killSchedule(7, 50, window); slices.IsSorted(s) {
		t.Error("the schedule is in order: the kills would drift along the window with the runs")
	}
}

func TestReadStartCalls_WhatReachedThePlatform(t *testing.T) {
	const app = "app_1"
	start := func(status int, state string) fakeclever.Call {
		return fakeclever.Call{Host: "bridge", Method: http.MethodPost, Path: "/v2/organisations/o/applications/" + app + "/instances", App: app, Status: status, State: state}
	}
	other := start(200, fakeclever.StateShouldBeDown)
	other.App, other.Path = "app_2", "/v2/organisations/o/applications/app_2/instances"
	observe := fakeclever.Call{Host: "bridge", Method: http.MethodGet, Path: "/v2/organisations/o/applications/" + app, App: app, Status: 200}
	calls := []fakeclever.Call{observe, start(200, fakeclever.StateShouldBeDown), other, start(409, fakeclever.StateWantsToBeUp)}
	if got := readStartCalls(calls, app); got != (startCalls{accepted: 1, refused: 1}) {
		t.Errorf("one start, one refused: %+v", got)
	}
	calls = append(calls, start(200, fakeclever.StateShouldBeUp))
	if got := readStartCalls(calls, app); got != (startCalls{accepted: 2, refused: 1, restarts: 1}) {
		t.Errorf("then a start of the app up: %+v", got)
	}
	if got := readStartCalls(nil, app); got != (startCalls{}) {
		t.Errorf("no call: %+v", got)
	}
}

// killRunOf is a run whose answers came toAnswers after the kill.
func killRunOf(toAnswers time.Duration, phase string, answers ...heldAnswer) killRun {
	if len(answers) == 0 {
		for range killHeld {
			answers = append(answers, heldAnswer{status: 200, appOK: true})
		}
	}
	return killRun{host: "c0.test", via: "n2", killed: "n1", elected: "n3", oldTerm: 2, newTerm: 3, offset: 100 * time.Millisecond,
		held: 5 * time.Millisecond, phase: phase, landed: true, startAt: -40 * time.Millisecond, calls: startCalls{accepted: 1},
		toAnswers: toAnswers, answers: answers, rejoin: 200 * time.Millisecond}
}

func TestPrintH_VerdictsAtTheTargets(t *testing.T) {
	s := time.Second
	good := killResult{redis: "7.0.15", seed: 42, planned: 4, runs: []killRun{
		killRunOf(2*s, phaseAfter), killRunOf(4*s, phaseSending), killRunOf(3*s, phaseBefore), killRunOf(5*s, phaseLanded)},
		warnings: map[string]int{`WARN "x"`: 2}}
	var out bytes.Buffer
	vs := printH(&out, good)
	if len(vs) != 3 {
		t.Fatalf("%d verdicts: %+v", len(vs), vs)
	}
	for _, v := range vs {
		if !v.pass || v.part != "H" {
			t.Errorf("failed: %+v", v)
		}
	}
	if vs[0].value != "5.00 s" || vs[1].value != "0 of 4" || vs[2].value != "0 of 4" {
		t.Errorf("values %q, %q, %q", vs[0].value, vs[1].value, vs[2].value)
	}
	for _, want := range []string{"seed 42: -seed 42 replays the kills", "-40 ms", "median 3.50 s, p90 5.00 s, max 5.00 s (min 2.00 s)",
		"before the start call 1, while it was sent 1, once the platform had it 1, after its answer 1",
		"lost wakes (an answer not the app's 200, or no start): 0; double starts (two accepted, or a restart): 0",
		"10×200", "n3 leads (t3), n1 back in 0.20 s", killRunHeader, `2× WARN "x"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	timedOut := heldAnswer{status: 504, err: errors.New("answered 504: did not wake up in time")}
	lost := killRunOf(21*s, phaseSending, append(slices.Repeat([]heldAnswer{{status: 200, appOK: true}}, 7), timedOut, timedOut, timedOut)...)
	noStart := killRunOf(2*s, phaseBefore)
	noStart.calls.accepted = 0
	twice := killRunOf(2*s, phaseLanded)
	twice.calls.accepted = 2
	restarted := killRunOf(2*s, phaseAfter)
	restarted.calls.restarts = 1
	bad := killResult{redis: "7", seed: 1, planned: 5, runs: []killRun{killRunOf(5001*time.Millisecond, phaseAfter), lost, noStart, twice, restarted}}
	out.Reset()
	vs = printH(&out, bad)
	for _, v := range vs {
		if v.pass {
			t.Errorf("passed: %+v", v)
		}
	}
	if vs[1].value != "2 of 5" || vs[2].value != "2 of 5" {
		t.Errorf("lost %q, double %q; want 2 of 5 each", vs[1].value, vs[2].value)
	}
	for _, want := range []string{"7×200 3×504", "run 2: 504 answered 504: did not wake up in time", "run 3: 0 accepted starts",
		"run 4: 2 accepted starts", "run 5: 1 accepted starts, 1 restarts", "1 RESTART"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// A part that stopped before its first run: no verdict.
	if vs := printH(&out, killResult{redis: "7", planned: 50}); len(vs) != 0 {
		t.Errorf("verdicts without a run: %+v", vs)
	}
}

func TestAnswersLine(t *testing.T) {
	as := []heldAnswer{{status: 200, appOK: true}, {status: 504}, {status: 200, appOK: true}, {err: errors.New("EOF")}, {status: 200}}
	if got := answersLine(as); got != "2×200 1×200-not-app 1×504 1×err" {
		t.Errorf("answersLine = %q", got)
	}
}

func TestRunLeaderKill_SkippedWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, progress bytes.Buffer
	e := &env{clean: &clusterenv.Cleanups{}, tmp: t.TempDir(), out: &out, progress: &progress}
	vs, err := runLeaderKill(context.Background(), e)
	if !errors.Is(err, errNoRedis) || len(vs) != 0 {
		t.Fatalf("runLeaderKill = %v, %v; want errNoRedis and no verdict", vs, err)
	}
	if !strings.Contains(out.String(), "H. Leader killed mid-wake: SKIPPED") || !strings.Contains(out.String(), "apt-get install redis-server") {
		t.Errorf("skipped: %q", out.String())
	}
}

func TestKillRoute_LoadsWithReapersOwnLoader(t *testing.T) {
	nodes := []*clusterenv.Node{{ID: "n1", RaftAddr: "127.0.0.1:21001", APIAddr: "127.0.0.1:21002"}}
	p := clusterenv.Params{RedisAddr: "127.0.0.1:21003", Secret: clusterenv.SecretToken("test-"), AdminToken: "admin-token-123",
		BridgeURL: "http://127.0.0.1:21004", Token: "clever-token-123", OwnerID: fakeclever.DefaultOrganisation,
		Routes: []clusterenv.RouteConfig{killRoute(3, "app_00000000-0000-4000-8000-000000000001", "http://127.0.0.1:21005")}}
	dir := t.TempDir()
	path, err := clusterenv.WriteConfig(dir, clusterenv.ClusterNodeConfig(nodes[0], nodes, p))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse(b, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatalf("reaper refuses part H's config: %v\n%s", err, b)
	}
	for _, want := range []string{"c3.test", "api_behavior: hold", "ready_delay: 500ms", "fail_timeout: 20s", "grace_period: 10m"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lacks %q:\n%s", want, b)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

func TestPrintG_VerdictsAtTheTargets(t *testing.T) {
	ms := time.Millisecond
	fo := func(first time.Duration) failover {
		return failover{killed: "n1", elected: "n2", apiNamed: "n2", oldTerm: 2, newTerm: 3, api: first - 10*ms, running: first - 5*ms, firstPass: first}
	}
	ask := func(lat time.Duration, ok bool) askResult {
		return askResult{via: "n2", latency: lat, held: heldAnswer{status: 200, appOK: ok, total: 4 * time.Second}}
	}
	full := clusterResult{redis: "7.0.15", apps: 3, rounds: 3, leader: "n1",
		failovers: []failover{fo(900 * ms), fo(3100 * ms), fo(1200 * ms)},
		asks:      []askResult{ask(9*ms, true), ask(30*ms, true), ask(12*ms, true)},
		checked:   true, starts: []int{1, 1, 1}, warnings: map[string]int{`WARN "x"`: 2}}
	var out bytes.Buffer
	vs := printG(&out, full)
	if len(vs) != 4 {
		t.Fatalf("%d verdicts: %+v", len(vs), vs)
	}
	for _, v := range vs {
		if !v.pass || v.part != "G" {
			t.Errorf("failed: %+v", v)
		}
	}
	if vs[0].value != "1.20 s" || vs[1].value != "12.0 ms" {
		t.Errorf("medians %q, %q; want 1.20 s and 12.0 ms", vs[0].value, vs[1].value)
	}
	for _, want := range []string{"median 1.20 s, max 3.10 s", "p90 30.0 ms", "3 of 3", `2× WARN "x"`, "1 start(s) × 3 app(s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	slow := full
	slow.failovers = []failover{fo(3100 * ms), fo(3010 * ms), fo(900 * ms)}
	slow.asks = []askResult{ask(21*ms, true), ask(25*ms, false), ask(9*ms, true)}
	slow.starts, slow.restarts = []int{1, 2, 1}, 0
	vs = printG(&out, slow)
	for _, v := range vs {
		if v.pass {
			t.Errorf("passed: %+v", v)
		}
	}
	restarted := full
	restarted.restarts = 1
	if vs := printG(&out, restarted); vs[3].pass {
		t.Error("a restart passed")
	}

	// A part that stopped after the asks: their verdicts only.
	partial := clusterResult{redis: "7", apps: 3, asks: full.asks, leader: "n1"}
	if vs := printG(&out, partial); len(vs) != 2 || !strings.Contains(vs[0].what, "ask") {
		t.Errorf("partial verdicts %+v", vs)
	}
}

func TestRunCluster_SkippedWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, progress bytes.Buffer
	e := &env{clean: &clusterenv.Cleanups{}, tmp: t.TempDir(), out: &out, progress: &progress}
	vs, err := runCluster(context.Background(), e)
	if !errors.Is(err, errNoRedis) || len(vs) != 0 {
		t.Fatalf("runCluster = %v, %v; want errNoRedis and no verdict", vs, err)
	}
	if !strings.Contains(out.String(), "G. Cluster: SKIPPED") || !strings.Contains(out.String(), "apt-get install redis-server") {
		t.Errorf("skipped: %q", out.String())
	}
}

func TestWarningsAndCountsLines(t *testing.T) {
	if got := warningsLine(nil); got != "none" {
		t.Errorf("no warnings: %q", got)
	}
	if got := warningsLine(map[string]int{"b": 1, "a": 1, "c": 3}); got != "3× c, 1× a, 1× b" {
		t.Errorf("warningsLine = %q", got)
	}
	if got := countsLine([]int{1, 2, 1, 0}); got != "0 start(s) × 1 app(s), 1 start(s) × 2 app(s), 2 start(s) × 1 app(s)" {
		t.Errorf("countsLine = %q", got)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestQuantile_NearestRank(t *testing.T) {
	ds := []time.Duration{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.9, 9}, {0.5, 5}, {1, 10}, {0, 1}, {0.91, 10}} {
		if got := quantile(ds, tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("empty quantile not 0")
	}
}

func TestPrintE_Verdicts(t *testing.T) {
	ms := time.Millisecond
	got := []wake{{latency: 2 * ms, pid: 1}, {latency: 10 * ms, pid: 2}, {latency: 30 * ms, pid: 3}}
	var out bytes.Buffer
	vs := printE(&out, got, 1, []int{3, 2, 2}, wake{latency: 5 * ms, total: 8 * time.Second, pid: 4}, 2*time.Second)
	// At both targets: a 10 ms median and a 30 ms p99 (of three wakes, the max) pass.
	if len(vs) != 3 || !vs[0].pass || vs[0].value != "10.0 ms" || !vs[1].pass || vs[1].value != "30.0 ms" || !vs[2].pass {
		t.Errorf("verdicts %+v", vs)
	}
	for _, want := range []string{"3 wakes (3 demo apps × 1 round)", "median 10.0 ms, p90 30.0 ms, p99 30.0 ms (min 2.0 ms, max 30.0 ms)", "     2.0 10.0 30.0\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("part E lacks %q:\n%s", want, out.String())
		}
	}
	slow := []wake{{latency: 10*ms + 100*time.Microsecond, pid: 1}}
	if vs := printE(&out, slow, 1, []int{3}, wake{pid: 2}, time.Second); vs[0].pass {
		t.Error("a 10.1 ms median passed a 10 ms target")
	}

	// An extra start, a missing one, or a pid seen twice, fails the last verdict.
	two := []wake{{pid: 1}, {pid: 2}, {pid: 3}, {pid: 4}, {pid: 5}, {pid: 6}} // 3 apps × 2 rounds
	if vs := printE(&out, two, 2, []int{4, 3, 3}, wake{pid: 7}, time.Second); !vs[2].pass {
		t.Errorf("priming + 2 rounds (+ the context wake of the first app) failed: %+v", vs[2])
	}
	for _, starts := range [][]int{{4, 4, 3}, {3, 3, 3}, {4, 3, 2}} {
		if vs := printE(&out, two, 2, starts, wake{pid: 7}, time.Second); vs[2].pass {
			t.Errorf("starts %v passed", starts)
		}
	}
	if vs := printE(&out, two, 2, []int{4, 3, 3}, wake{pid: 3}, time.Second); vs[2].pass {
		t.Error("a reused pid passed")
	}
}

// TestPrintE_P99IsNotTheMax: of 100 wakes, one slow wake is the max, not the p99;
// two are.
func TestPrintE_P99IsNotTheMax(t *testing.T) {
	ms := time.Millisecond
	wakes := func(slow int) []wake {
		var ws []wake
		for i := range 100 {
			d := 3 * ms
			if i < slow {
				d = 31 * ms
			}
			ws = append(ws, wake{latency: d, pid: i + 1})
		}
		return ws
	}
	starts := make([]int, 10)
	for i := range starts {
		starts[i] = 11
	}
	starts[0] = 12
	var out bytes.Buffer
	if vs := printE(&out, wakes(1), 10, starts, wake{pid: 1000}, time.Second); !vs[1].pass || vs[1].value != "3.0 ms" || !vs[2].pass {
		t.Errorf("one slow wake in 100: %+v", vs)
	}
	if vs := printE(&out, wakes(2), 10, starts, wake{pid: 1000}, time.Second); vs[1].pass || vs[1].value != "31.0 ms" {
		t.Errorf("two slow wakes in 100: %+v", vs[1])
	}
	if n := strings.Count(out.String(), "\n     3.0 3.0"); n != 2*4 { // rows of 20, the first of each run starts slow
		t.Errorf("%d rows of wakes starting 3.0 3.0, want 8:\n%s", n, out.String())
	}
}

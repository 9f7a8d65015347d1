package main

import (
	"bytes"
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
	got := []wake{{latency: 10 * ms, pid: 1}, {latency: 20 * ms, pid: 2}, {latency: 40 * ms, pid: 3}}
	var out bytes.Buffer
	vs := printE(&out, got, []int{3, 2, 2}, wake{latency: 5 * ms, total: 8 * time.Second, pid: 4}, 2*time.Second)
	if len(vs) != 2 || !vs[0].pass || vs[0].value != "20.0 ms" || !vs[1].pass {
		t.Errorf("verdicts %+v", vs)
	}
	// An extra start, or a pid seen twice, fails the second verdict.
	vs = printE(&out, got, []int{3, 3, 2}, wake{pid: 4}, time.Second)
	if vs[1].pass {
		t.Error("an app started three times passed")
	}
	vs = printE(&out, got, []int{3, 2, 2}, wake{pid: 3}, time.Second)
	if vs[1].pass {
		t.Error("a reused pid passed")
	}
	slow := []wake{{latency: 31 * ms, pid: 1}}
	if vs := printE(&out, slow, []int{3}, wake{pid: 2}, time.Second); vs[0].pass {
		t.Error("a 31 ms median passed a 30 ms target")
	}
}

package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/bench/load"
)

func TestMedian(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("odd: %v", got)
	}
	if got := median([]time.Duration{4, 1, 3, 2}); got != 2 { // (2+3)/2 in integer nanoseconds
		t.Errorf("even: %v", got)
	}
	if got := median([]float64(nil)); got != 0 {
		t.Errorf("empty: %v", got)
	}
	xs := []float64{5, 1, 4}
	median(xs)
	if !slices.Equal(xs, []float64{5, 1, 4}) {
		t.Errorf("median sorted its argument: %v", xs)
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 41230: "41,230", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%d) = %q, want %q", in, got, want)
		}
	}
}

func fakeSample(rps int64, cpu, latency time.Duration) sample {
	h := load.NewHistogram()
	for range rps {
		h.Record(latency)
	}
	return sample{res: load.Result{Requests: rps, Elapsed: time.Second, Latency: h}, cpuPerReq: cpu}
}

func TestAwakeVerdicts_AtTheTargets(t *testing.T) {
	us := time.Microsecond
	rep := func(s sample) []sample { return []sample{s, s, s} }
	a := samples{
		kDirect: rep(fakeSample(40000, 0, 0)),
		kBare:   rep(fakeSample(10000, 100*us, 0)),
		kPlain:  rep(fakeSample(9000, 115*us, 0)), // exactly 0.90× and 1.15×: pass
		kPlugin: rep(fakeSample(8990, 116*us, 0)), // just outside both: fail
	}
	b := samples{
		kBare:   rep(fakeSample(100, 0, 200*us)),
		kPlain:  rep(fakeSample(100, 0, 250*us)), // +50 µs: pass
		kPlugin: rep(fakeSample(100, 0, 260*us)), // +60 µs: fail
	}
	c := samples{
		kBare:   rep(fakeSample(2000, 0, 0)),
		kPlain:  rep(fakeSample(1900, 0, 0)), // 0.95×: pass
		kPlugin: rep(fakeSample(1800, 0, 0)), // 0.90×: fail
	}
	vs := awakeVerdicts(a, b, c)
	if len(vs) != 8 {
		t.Fatalf("%d verdicts, want 8", len(vs))
	}
	for i, v := range vs {
		wantPass := i < 4 // the plain route's four first
		if v.pass != wantPass {
			t.Errorf("%s = %s (target %s): pass %v, want %v", v.what, v.value, v.target, v.pass, wantPass)
		}
	}
	// The histogram's precision (1/128) must not move a value across a 50 µs line.
	if vs[2].value != "+50.0 µs" {
		t.Errorf("p50 difference written %q, want +50.0 µs", vs[2].value)
	}
}

func TestPrintSummary_ExitStatus(t *testing.T) {
	pass := verdict{"A", "x", "1", "≥ 1", true, ""}
	fail := verdict{"B", "y", "0", "≥ 1", false, ""}
	var out bytes.Buffer
	if got := printSummary(&out, []verdict{pass}, nil, []string{"G: no redis-server"}, time.Second, false); got != 0 || !strings.Contains(out.String(), "All 1 targets pass.") || !strings.Contains(out.String(), "SKIPPED  G: no redis-server") {
		t.Errorf("all pass: %d\n%s", got, out.String())
	}
	out.Reset()
	if got := printSummary(&out, []verdict{pass, fail}, nil, nil, time.Second, false); got != 1 || !strings.Contains(out.String(), "FAIL  B  y") {
		t.Errorf("one fails: %d\n%s", got, out.String())
	}
	out.Reset()
	if got := printSummary(&out, []verdict{pass}, []string{"F: boom\nmore"}, nil, time.Second, true); got != 2 || !strings.Contains(out.String(), "ERROR    F: boom") || !strings.Contains(out.String(), "quick mode") {
		t.Errorf("a part failed: %d\n%s", got, out.String())
	}
}

// TestPaired_ComparesRoundByRound: a background load that halves everyone's
// throughput in one round must not move the ratio.
func TestPaired_ComparesRoundByRound(t *testing.T) {
	bare := []sample{fakeSample(1000, 0, 0), fakeSample(500, 0, 0), fakeSample(1000, 0, 0)}
	x := []sample{fakeSample(900, 0, 0), fakeSample(450, 0, 0), fakeSample(900, 0, 0), fakeSample(1, 0, 0)}
	each, med := paired(x, bare, func(x, b sample) float64 { return x.rps() / b.rps() })
	if len(each) != 3 || med < 0.8999 || med > 0.9001 {
		t.Errorf("paired = %v, median %v; want three 0.90", each, med)
	}
	if joinRatios(each) != "0.90 0.90 0.90" {
		t.Errorf("joinRatios = %q", joinRatios(each))
	}
	if joinMicros([]float64{float64(12500 * time.Nanosecond), -3000}) != "12 -3" {
		t.Errorf("joinMicros = %q", joinMicros([]float64{12500, -3000}))
	}
}

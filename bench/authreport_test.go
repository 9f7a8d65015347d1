package main

import (
	"strings"
	"testing"
	"time"
)

// The verdict is on reaper's CPU per call, as issue 24 asks; the bare server's
// figure and reaper's excess over it are printed beside it, and the floor line
// only when a bare Go server alone is over the target.
func TestPrintJCost(t *testing.T) {
	for _, c := range []struct {
		name              string
		floor, call, diff time.Duration
		pass, floorLine   bool
		nginx             []float64
		want              []string
	}{
		{"over the floor and the target", 47 * time.Microsecond, 68 * time.Microsecond, 21 * time.Microsecond, false, true, nil,
			[]string{"bare Go auth 47.0 µs", "reaper 68.0 µs", "+21.0 µs (+21 +21)", "FAIL reaper CPU per auth call: 68.0 µs, target ≤ 30.0 µs"}},
		{"under the target", 20 * time.Microsecond, 26 * time.Microsecond, 6 * time.Microsecond, true, false, nil,
			[]string{"PASS reaper CPU per auth call: 26.0 µs", "+6.0 µs"}},
		{"nginx over the target too", 47 * time.Microsecond, 68 * time.Microsecond, 21 * time.Microsecond, false, true,
			[]float64{float64(40 * time.Microsecond), float64(44 * time.Microsecond)},
			[]string{"nginx answering 200 (C, one process, no access log): 42.0 µs a call (40 44)", "reaper / nginx 1.62×",
				"The C floor: nginx answering 200 costs 42.0 µs a call here, 1.40× the target on its own"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			d := float64(c.diff)
			vs := printJCost(&b, [3]time.Duration{c.floor, c.call, c.diff},
				[3][]float64{{float64(c.floor), float64(c.floor)}, {float64(c.call), float64(c.call)}, {d, d}}, c.nginx)
			out := b.String()
			if len(vs) != 1 || vs[0].pass != c.pass || vs[0].value != micros(c.call) {
				t.Fatalf("verdict %+v, want pass=%v on %s", vs, c.pass, micros(c.call))
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
			if got := strings.Contains(out, "The C floor:"); got != (c.nginx != nil) {
				t.Errorf("C floor line printed %v, want %v:\n%s", got, c.nginx != nil, out)
			}
			if got := strings.Contains(out, "The floor:"); got != c.floorLine {
				t.Errorf("floor line printed %v, want %v:\n%s", got, c.floorLine, out)
			}
		})
	}
}

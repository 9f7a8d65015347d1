package main

import (
	"strings"
	"testing"
	"time"
)

// The verdict is on the defaults' row only, and any election in the window
// fails it; elections per hour scale the count by the window.
func TestPrintI_VerdictOnTheDefaults(t *testing.T) {
	row := func(name string, elected int) churnResult {
		return churnResult{name: name, hb: time.Second, el: time.Second, lease: time.Second / 2, elected: elected,
			termFrom: 2, termTo: 2 + uint64(elected), served: 100, window: time.Minute, burners: 6, burnerCPU: 2}
	}
	for _, tc := range []struct {
		old, now int
		pass     bool
	}{{9, 0, true}, {0, 1, false}, {0, 0, true}} {
		var out strings.Builder
		vs := printI(&out, []churnResult{row("before", tc.old), row("defaults", tc.now)})
		if len(vs) != 1 || vs[0].pass != tc.pass || vs[0].part != "I" {
			t.Errorf("old %d, now %d: verdicts %+v, want one for I, pass %v", tc.old, tc.now, vs, tc.pass)
		}
		if !strings.Contains(out.String(), "540") && tc.old == 9 {
			t.Errorf("9 elections in a minute should print 540 an hour:\n%s", out.String())
		}
	}
}

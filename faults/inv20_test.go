package main

import (
	"strings"
	"testing"
)

// midStep is a kindRedisMidStep fault with redis-server down from 10 s to 15 s
// and its probe p1; answered says when the probe got its app's answer (0: a 504).
func midStep(answered float64) *observation {
	o := obs()
	o.injections = append(o.injections, injection{fault: fault{kind: kindRedisMidStep, at: 1}, node: -1, app: 0, at: sec(10), end: sec(15), probe: "p1"})
	r := result{id: "p1", kind: kindAPIHold, app: 0, node: 1, sent: sec(15), end: sec(35)}
	if answered > 0 {
		r.headers, r.status, r.fromApp, r.appOK = sec(answered), 200, true, true
	} else {
		r.headers, r.status, r.marker, r.errorText = sec(35), 504, "error", "the application did not wake up in time"
	}
	o.results = append(o.results, r)
	return o
}

func TestCheckWakeAfterStoreBack(t *testing.T) {
	if c := judge(checkWakeAfterStoreBack, midStep(19)); c.checked != 1 || len(c.violations) != 0 {
		t.Errorf("answered 4 s after the store came back: %+v", c)
	}
	// A leader that waits out the lock's TTL answers some 12 s after.
	if c := judge(checkWakeAfterStoreBack, midStep(27)); len(c.violations) != 1 || !strings.Contains(c.violations[0], "p1") {
		t.Errorf("answered 12 s after the store came back: %+v", c)
	}
	if c := judge(checkWakeAfterStoreBack, midStep(0)); len(c.violations) != 1 {
		t.Errorf("a 504: %+v", c)
	}
	if c := judge(checkWakeAfterStoreBack, midStep(27).fault(kindPaaS5xx, -1, 16, 20)); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("the platform failing meanwhile: %+v", c)
	}
	// A fault that began after the answer delayed nothing: still judged.
	if c := judge(checkWakeAfterStoreBack, midStep(19).fault(kindPaaS5xx, -1, 20, 22)); c.exempt != 0 || c.checked != 1 {
		t.Errorf("the platform failing after the answer: %+v", c)
	}
	// Another app's crash costs this wake nothing: still judged.
	o := midStep(27)
	o.injections = append(o.injections, injection{fault: fault{kind: kindAppCrash, at: 2}, node: -1, app: 1, at: sec(16), end: sec(16)})
	if c := judge(checkWakeAfterStoreBack, o); len(c.violations) != 1 {
		t.Errorf("another app's crash meanwhile: %+v", c)
	}
	skipped := obs()
	skipped.injections = []injection{{fault: fault{kind: kindRedisMidStep}, skipped: "no app asleep"}}
	if c := judge(checkWakeAfterStoreBack, skipped); c.checked != 0 {
		t.Errorf("a skipped fault: %+v", c)
	}
}

func TestCheckNoElectionInCPUBurst(t *testing.T) {
	burst := func(before, after uint64) *observation {
		o := obs()
		o.injections = append(o.injections, injection{fault: fault{kind: kindCPUBurst, at: 1}, node: -1, app: -1,
			at: sec(10), end: sec(18), termBefore: before, termAfter: after})
		return o
	}
	if c := judge(checkNoElectionInCPUBurst, burst(4, 4)); c.checked != 1 || len(c.violations) != 0 {
		t.Errorf("no new term: %+v", c)
	}
	if c := judge(checkNoElectionInCPUBurst, burst(4, 6)); len(c.violations) != 1 || !strings.Contains(c.violations[0], "4→6") {
		t.Errorf("two new terms: %+v", c)
	}
	if c := judge(checkNoElectionInCPUBurst, burst(4, 5).fault(kindLeaderKill, 0, 12, 14)); len(c.violations) != 0 || c.exempt != 1 {
		t.Errorf("the leader killed meanwhile: %+v", c)
	}
	if c := judge(checkNoElectionInCPUBurst, burst(0, 5)); len(c.violations) != 0 || c.undecided != 1 {
		t.Errorf("no term read before: %+v", c)
	}
}

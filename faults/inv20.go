package main

import (
	"slices"
	"time"
)

// The invariants of issue 20's faults.

// wakeAfterStoreBound bounds a wake asked right after redis-server came back
// from a kill in the middle of the leader's step, to the app's answer: a fast
// tick (1 s), the start, the boot (bootTime + deployDelay), the look that sees
// it up (1 s) and readyDelay, with room for a loaded machine. The lock the step
// could not release has a TTL of 15 s: a leader that waited it out would answer
// some 9 s after the store is back, plus the same wake.
const wakeAfterStoreBound = 8 * time.Second

// checkWakeAfterStoreBack: the probe of each kindRedisMidStep fault, a wake
// asked the moment redis-server is back, got its app's answer within
// wakeAfterStoreBound of that moment. Excused when another fault struck
// meanwhile (a node down, the platform failing, redis-server again, a CPU
// burst): any of them delays a wake by itself.
func checkWakeAfterStoreBack(o *observation, c *checkResult) {
	for _, inj := range o.injections {
		if inj.fault.kind != kindRedisMidStep || inj.skipped != "" || inj.failed != "" || inj.probe == "" {
			continue
		}
		c.checked++
		r, ok := o.resultOf(inj.probe)
		if !ok {
			c.undecided++ // never sent: every node was down
			continue
		}
		until := inj.end.Add(wakeAfterStoreBound)
		if !r.headers.IsZero() && r.headers.Before(until) {
			until = r.headers // a fault after the answer delayed nothing
		}
		if o.otherFault(inj, inj.end, until) {
			c.exempt++
			continue
		}
		if !r.fromApp || !r.appOK || r.headers.IsZero() || r.headers.Sub(inj.end) > wakeAfterStoreBound {
			c.violate("app %d: redis-server back at %s after a kill mid-step; %s: want the app's answer by %s",
				inj.app, o.at(inj.end), o.describe(r), o.at(inj.end.Add(wakeAfterStoreBound)))
		}
	}
}

// checkNoElectionInCPUBurst: the cluster's Raft term did not move during a CPU
// burst (until a second after it). Excused when a node fault struck meanwhile,
// or ended less than 3 s before: a killed leader or a cut node calls for an
// election by itself (a node back from a cut, with a higher term, right after
// it rejoins).
func checkNoElectionInCPUBurst(o *observation, c *checkResult) {
	for _, inj := range o.injections {
		if inj.fault.kind != kindCPUBurst || inj.skipped != "" || inj.failed != "" {
			continue
		}
		c.checked++
		if inj.termBefore == 0 || inj.termAfter == 0 {
			c.undecided++
			continue
		}
		if o.nodeFaultAny(inj.at.Add(-3*time.Second), inj.end.Add(time.Second)) {
			c.exempt++
			continue
		}
		if inj.termAfter > inj.termBefore {
			c.violate("a CPU burst of %s from %s: terms %d→%d, %d election(s) with no other fault",
				inj.end.Sub(inj.at).Round(100*time.Millisecond), o.at(inj.at), inj.termBefore, inj.termAfter, inj.termAfter-inj.termBefore)
		}
	}
}

// otherFault reports whether a fault other than self was under way at some
// moment of [from, to] (an app stopped from outside counts only if it is self's
// app: it costs no wake of another).
func (o *observation) otherFault(self injection, from, to time.Time) bool {
	for _, inj := range o.injections {
		appOnly := inj.fault.kind == kindAppCrash || inj.fault.kind == kindStopAfterWake
		if inj.fault == self.fault || inj.skipped != "" || appOnly && inj.app != self.app {
			continue
		}
		end := inj.end
		if end.IsZero() {
			end = inj.at
		}
		if !inj.at.After(to) && !end.Before(from) {
			return true
		}
	}
	return false
}

// nodeFaultAny reports whether a fault hit any node during [from, to].
func (o *observation) nodeFaultAny(from, to time.Time) bool {
	for _, inj := range o.injections {
		if inj.skipped == "" && slices.Contains(nodeKindsAll, inj.fault.kind) && !inj.at.After(to) && !inj.end.Before(from) {
			return true
		}
	}
	return false
}

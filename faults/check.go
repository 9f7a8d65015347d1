package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// The checks read only what the harness saw from outside reaper: the clients'
// answers, the apps' own record of what reached them, the platform's call log
// and its samples, the apps' history on the admin API, the faults as they ran.
// Each invariant says how many items it checked, how many a fault excused (a
// request through a node that was killed cannot be asked to end well), how many
// came too late to judge, and the evidence of every violation.

// observation is what one schedule left to check.
type observation struct {
	seed       uint64
	start      time.Time // traffic and faults began
	quiet      time.Time // every fault undone, every request ended
	end        time.Time // the cluster settled (or the bound passed); sampling stopped
	apps       []worldApp
	results    []result
	hits       []appHit
	calls      []fakeclever.Call
	lines      [][]sample // per app
	history    [][]transition
	injections []injection
	converged  convergence
}

// checkResult is one invariant's verdict on one schedule.
type checkResult struct {
	name       string
	checked    int
	exempt     int      // excused by a fault (see each invariant)
	undecided  int      // too close to the end of the observation to judge
	violations []string // the evidence, one line each
}

func (c *checkResult) violate(format string, a ...any) {
	c.violations = append(c.violations, fmt.Sprintf(format, a...))
}

// invariant is one named check.
type invariant struct {
	name string
	fn   func(o *observation, c *checkResult)
}

// invariants lists the checks in the report's order (issue 10, item 9).
var invariants = []invariant{
	{"no app started while up", checkNoStartWhileUp},
	{"never two starts for one need", checkOneStartPerNeed},
	{"no app woken by monitors alone", checkNoWakeByMonitors},
	{"no stop with a request at the app", checkNoStopInFlight},
	{"no stop within the grace period of traffic", checkNoStopUnderTraffic},
	{"no stop with a request held since before its mark", checkNoStopWithHeld},
	{"every held request answered (app, or documented 503/504)", checkHeldAnswered},
	{"no held request past fail_timeout + 3 s", checkHeldBounded},
	{"no held request timed out while its app was up", checkNoTimeoutWhileUp},
	{"no 502", checkNo502},
	{"every body that reached its app intact, once", checkBodies},
	{"every other answer the documented one", checkOtherAnswers},
	{"every wake ask served, or an Error with its cause", checkAsksServed},
	{"an app in Error left alone until sleep --force, then stopped once", checkErrorForced},
	{"one leader, statuses match the platform within 30 s", checkConverged},
	{"a killed node shown unreachable by /api/cluster within 5 s", checkDeadNodeShown},
	{"a wake asked once redis-server is back (killed mid-step) answered within 8 s", checkWakeAfterStoreBack},
	{"no election during a CPU load burst", checkNoElectionInCPUBurst},
}

// check runs every invariant on the observation.
func check(o *observation) []checkResult {
	out := make([]checkResult, len(invariants))
	for i, inv := range invariants {
		out[i].name = inv.name
		inv.fn(o, &out[i])
	}
	return out
}

// at writes a moment as seconds from the schedule's start.
func (o *observation) at(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%.2fs", t.Sub(o.start).Seconds())
}

// appIndex returns the index of the app id, or -1.
func (o *observation) appIndex(id string) int {
	return slices.IndexFunc(o.apps, func(a worldApp) bool { return a.id == id })
}

// platformCall is an accepted start or stop at the platform.
type platformCall struct {
	at    time.Time
	app   int
	state string // the app's state when it came
}

// accepted returns the starts (POST …/instances) or stops (DELETE) the platform
// accepted, oldest first.
func (o *observation) accepted(method string) []platformCall {
	var out []platformCall
	for _, c := range o.calls {
		if c.Method != method || !strings.HasSuffix(c.Path, "/applications/"+c.App+"/instances") || c.Status/100 != 2 {
			continue
		}
		if i := o.appIndex(c.App); i >= 0 {
			out = append(out, platformCall{at: c.At, app: i, state: c.State})
		}
	}
	return out
}

func (o *observation) starts() []platformCall { return o.accepted(http.MethodPost) }
func (o *observation) stops() []platformCall  { return o.accepted(http.MethodDelete) }

// crashes returns when each app was stopped from outside.
func (o *observation) crashes() []platformCall {
	var out []platformCall
	for _, inj := range o.injections {
		if (inj.fault.kind == kindAppCrash || inj.fault.kind == kindStopAfterWake) && inj.app >= 0 && inj.skipped == "" {
			out = append(out, platformCall{at: inj.at, app: inj.app})
		}
	}
	return out
}

// nodeFault returns the first fault that hit node during [from, to] (killed,
// stopped, cut off; until it served again), with the kinds asked for, if any.
func (o *observation) nodeFault(node int, from, to time.Time, kinds ...faultKind) (injection, bool) {
	for _, inj := range o.injections {
		if inj.node != node || inj.skipped != "" || !slices.Contains(kinds, inj.fault.kind) {
			continue
		}
		if !inj.at.After(to) && !inj.end.Before(from) {
			return inj, true
		}
	}
	return injection{}, false
}

// nodeKindsAll are the faults that disturb a node.
var nodeKindsAll = []faultKind{kindLeaderKill, kindFollowerKill, kindNodeTerm, kindPartition, kindOperatorKill}

// killed are the faults that end a node's process.
var killed = []faultKind{kindLeaderKill, kindFollowerKill, kindNodeTerm, kindOperatorKill}

// redisDown reports whether redis-server was down at some moment of [from, to].
func (o *observation) redisDown(from, to time.Time) bool {
	for _, inj := range o.injections {
		if (inj.fault.kind == kindRedis || inj.fault.kind == kindRedisMidStep) && !inj.at.After(to) && !inj.end.Before(from) {
			return true
		}
	}
	return false
}

// resultOf returns the client's result of a request id.
func (o *observation) resultOf(id string) (result, bool) {
	i := slices.IndexFunc(o.results, func(r result) bool { return r.id == id })
	if i < 0 {
		return result{}, false
	}
	return o.results[i], true
}

// describe writes a result for the evidence.
func (o *observation) describe(r result) string {
	s := fmt.Sprintf("%s (%s, app %d, n%d) sent %s", r.id, r.kind, r.app, r.node+1, o.at(r.sent))
	switch {
	case r.headers.IsZero():
		s += fmt.Sprintf(", no answer after %.2fs: %s", r.end.Sub(r.sent).Seconds(), r.err)
	default:
		s += fmt.Sprintf(", answered %d after %.2fs", r.status, r.headers.Sub(r.sent).Seconds())
		if r.marker != "" {
			s += fmt.Sprintf(" [%s: %s %q]", headerMarker, r.marker, r.errorText)
		}
		if r.err != "" {
			s += ": " + r.err
		}
	}
	return s
}

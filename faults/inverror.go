package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The invariant of an app in Error (issue 20, item 4): reaper keeps its hands
// off it — no start, no stop, no look beyond one per job pass — until an
// operator's sleep --force, which stops it once.

// forcedBound is how long after an operator's sleep --force the injector waits
// for the app to be stopped. A forced stop of an app in Error waits for a moment
// with no request at it, as the nodes' in-flight counts tell: flushed every 5 s,
// those of a node killed meanwhile kept until they expire (15 s), none read
// while redis-server is down; and the app's traffic comes in bursts of up to
// 6 s.
const forcedBound = 40 * time.Second

// errorLookEvery bounds the platform calls about an app in Error: the job's
// looks, at its passes and when a request finds the app not served. A node asks
// the leader for a look at most once a second per app (wakeAsks.lookSoon), so
// a cluster under traffic may ask one a second per node, and the job's own pass
// adds one: no more than clusterSize+1 a second is no storm (an app in Error was
// probed 35 to 40 times a second before issue 20).
const errorLookEvery = time.Second

// checkErrorForced: for each app the fault put in Error, its history says so
// with a cause; while in Error the platform got neither a start nor a stop for
// it, and no more calls about it than errorLookEvery allows (the looks the
// nodes ask and the job's own, no storm); after the operator's sleep --force, one stop until the app was seen
// stopped (none when the platform showed it down throughout), within
// forcedBound.
func checkErrorForced(o *observation, c *checkResult) {
	for _, inj := range o.injections {
		if inj.fault.kind != kindErrorForced || inj.skipped != "" || inj.app < 0 || inj.forced.IsZero() {
			continue
		}
		c.checked++
		id := o.apps[inj.app].id
		if !o.errorBetween(inj.app, inj.at.Add(-errorWait), inj.at) {
			c.violate("app %d: seen in Error at %s, with no Error and its cause in its history", inj.app, o.at(inj.at))
		}
		var calls []string
		for _, call := range o.calls {
			if call.App != id || (call.Host != "api" && call.Host != "bridge") || call.At.Before(inj.at) || !call.At.Before(inj.forced) {
				continue
			}
			calls = append(calls, fmt.Sprintf("%s %s %s", o.at(call.At), call.Method, call.Path))
			if strings.HasSuffix(call.Path, "/instances") && (call.Method == http.MethodPost || call.Method == http.MethodDelete) {
				c.violate("app %d: %s %s at %s while it was in Error (since %s), before any operator's action",
					inj.app, call.Method, call.Path, o.at(call.At), o.at(inj.at))
			}
		}
		if bound := (int(inj.forced.Sub(inj.at)/errorLookEvery) + 1) * (clusterSize + 1); len(calls) > bound {
			c.violate("app %d: %d platform calls about it in its %.1fs in Error, more than one a second per node and the job's (%d): %s",
				inj.app, len(calls), inj.forced.Sub(inj.at).Seconds(), bound, strings.Join(calls, ", "))
		}
		stops := 0
		for _, s := range o.stops() {
			if o.forcedStop(s) && s.app == inj.app {
				stops++
			}
		}
		// One stop; none only when the platform never showed the app up
		// meanwhile (its start failed: there was nothing to stop, and a stop
		// cut short, by a leader's death or the API's failure, need not be
		// sent again).
		_, wasUp := upBetween(o.lines[inj.app], inj.forced, inj.end)
		if inj.failed == "" && (stops > 1 || stops == 0 && wasUp) {
			c.violate("app %d: %d stops accepted from sleep --force at %s until it was seen stopped at %s (platform up meanwhile: %v), want 1",
				inj.app, stops, o.at(inj.forced), o.at(inj.end), wasUp)
		}
		if inj.failed != "" {
			var hist []string
			for _, tr := range o.history[inj.app] {
				if !tr.At.Before(inj.at.Add(-errorWait)) {
					hist = append(hist, fmt.Sprintf("%s %s→%s (%s)", o.at(tr.At), tr.From, tr.To, tr.Cause))
				}
			}
			c.violate("app %d: %s; its history since: %s", inj.app, inj.failed, strings.Join(hist, "; "))
		}
	}
}

// forcedStop reports whether the stop s is the one an operator's sleep --force
// asked for (from the ask until the app was seen stopped, or forcedBound when it
// was not): it overrides the grace period.
func (o *observation) forcedStop(s platformCall) bool {
	for _, inj := range o.injections {
		until := inj.end
		if inj.failed != "" {
			until = inj.forced.Add(forcedBound)
		}
		if inj.fault.kind == kindErrorForced && inj.app == s.app && !inj.forced.IsZero() &&
			!s.at.Before(inj.forced) && !s.at.After(until.Add(clockTolerance)) {
			return true
		}
	}
	return false
}

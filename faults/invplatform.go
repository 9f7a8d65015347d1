package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// The invariants on what the platform was asked to do: starts, stops, and
// whether the cluster ends up agreeing with it.

// checkNoStartWhileUp: every start the platform accepted came while it said the
// app was stopped (a start of a running app restarts it on Clever Cloud).
func checkNoStartWhileUp(o *observation, c *checkResult) {
	for _, s := range o.starts() {
		c.checked++
		if s.state != fakeclever.StateShouldBeDown {
			c.violate("app %d: a start accepted at %s while the platform said %s", s.app, o.at(s.at), s.state)
		}
	}
}

// checkOneStartPerNeed: between two starts of an app the platform accepted, the
// app was stopped (by reaper, or from outside: a crash), or went to Error (its
// start failed; only an operator brings it back, and the next start is a new
// need: kindErrorForced).
func checkOneStartPerNeed(o *observation, c *checkResult) {
	downs := append(o.stops(), o.crashes()...)
	var last = map[int]time.Time{}
	for _, s := range o.starts() {
		c.checked++
		prev, seen := last[s.app]
		last[s.app] = s.at
		if !seen {
			continue
		}
		stopped := false
		for _, d := range downs {
			stopped = stopped || d.app == s.app && d.at.After(prev) && d.at.Before(s.at)
		}
		stopped = stopped || o.errorBetween(s.app, prev, s.at)
		if !stopped {
			c.violate("app %d: started at %s and again at %s, with no stop in between", s.app, o.at(prev), o.at(s.at))
		}
	}
}

// wakeWindow is how long before a start a request must have asked for it: the
// fail timeout and the leader's retries fit in it.
const wakeWindow = 30 * time.Second

// checkNoWakeByMonitors: every start the platform accepted followed a request
// for the app that was not a monitor's (a monitor must never wake an app).
func checkNoWakeByMonitors(o *observation, c *checkResult) {
	for _, s := range o.starts() {
		c.checked++
		asked := false
		for _, r := range o.results {
			asked = asked || r.app == s.app && r.kind != kindMonitor && !r.sent.After(s.at) && s.at.Sub(r.sent) <= wakeWindow
		}
		if !asked {
			c.violate("app %d: started at %s with no request but monitors' in the %s before", s.app, o.at(s.at), wakeWindow)
		}
	}
}

// checkNoStopInFlight: no stop the platform accepted came while a request (a
// download, a WebSocket) was at the app. Monitors are not traffic. Excused: a
// request through a node that a fault hit meanwhile (its node dropped it).
func checkNoStopInFlight(o *observation, c *checkResult) {
	for _, s := range o.stops() {
		for _, h := range o.hits {
			if h.app != s.app || h.monitor || h.id == "" || !h.arrived.Before(s.at) || !h.ended.IsZero() && !h.ended.After(s.at) {
				continue
			}
			r, _ := o.resultOf(h.id)
			if _, hit := o.nodeFault(r.node, h.arrived, s.at, nodeKindsAll...); hit {
				c.exempt++
				continue
			}
			c.violate("app %d: stopped at %s while %s %s was at the app (since %s, until %s)",
				s.app, o.at(s.at), h.path, h.id, o.at(h.arrived), o.at(h.ended))
		}
		c.checked++
	}
}

// checkNoStopWithHeld: no stop the platform accepted came while a request had
// been held for the app since before reaper marked it WaitingForShutdown (a held
// request is traffic; only those that come after the mark wait for the stop, then
// wake the app). The mark is read from the app's history. Excused: a request
// through a node that a fault hit meanwhile (it may not have told the others).
func checkNoStopWithHeld(o *observation, c *checkResult) {
	for _, s := range o.stops() {
		c.checked++
		mark, ok := o.lastTransition(s.app, "WaitingForShutdown", s.at)
		if !ok {
			c.undecided++
			continue
		}
		for _, r := range o.results {
			answered := r.headers
			if answered.IsZero() {
				answered = r.end
			}
			if r.app != s.app || !r.kind.held() || !r.sent.Before(mark.Add(-clockTolerance)) || !answered.After(s.at) || o.reachedAppBefore(r.id, s.at) {
				continue
			}
			if _, hit := o.nodeFault(r.node, r.sent, s.at, nodeKindsAll...); hit {
				c.exempt++
				continue
			}
			c.violate("app %d: marked WaitingForShutdown at %s and stopped at %s while it held %s", s.app, o.at(mark), o.at(s.at), o.describe(r))
		}
	}
}

// lastTransition returns the time of the app's last transition to status at or
// before t, from its history.
func (o *observation) lastTransition(app int, status string, t time.Time) (time.Time, bool) {
	var last time.Time
	for _, tr := range o.history[app] {
		if tr.To == status && !tr.At.After(t) && tr.At.After(last) {
			last = tr.At
		}
	}
	return last, !last.IsZero()
}

// reachedAppBefore reports whether the request id reached its app before t.
func (o *observation) reachedAppBefore(id string, t time.Time) bool {
	for _, h := range o.hits {
		if h.id == id && h.arrived.Before(t) {
			return true
		}
	}
	return false
}

// Tolerances of the traffic check: the nodes' clocks are the harness's (one
// machine); a node flushes its traffic every 5 s, so a node killed within that
// long after a request may have lost it.
const (
	clockTolerance = 250 * time.Millisecond
	flushLag       = 6 * time.Second
)

// checkNoStopUnderTraffic: no stop the platform accepted came within the grace
// period of a request's end at the app. Excused: a request through a node that a
// fault hit before it flushed its traffic, or while redis-server was down; and
// the stop an operator's sleep --force asked for (kindErrorForced).
func checkNoStopUnderTraffic(o *observation, c *checkResult) {
	for _, s := range o.stops() {
		c.checked++
		if o.forcedStop(s) { // an operator's sleep --force overrides the grace period
			c.exempt++
			continue
		}
		for _, h := range o.hits {
			if h.app != s.app || h.monitor || h.id == "" || h.ended.IsZero() || h.ended.After(s.at) ||
				s.at.Sub(h.ended) >= gracePeriod-clockTolerance {
				continue
			}
			r, _ := o.resultOf(h.id)
			if _, hit := o.nodeFault(r.node, h.ended.Add(-time.Second), h.ended.Add(flushLag), nodeKindsAll...); hit || o.redisDown(h.ended, s.at) {
				c.exempt++
				continue
			}
			c.violate("app %d: stopped at %s, %.2fs after %s %s ended at the app (grace period %s)",
				s.app, o.at(s.at), s.at.Sub(h.ended).Seconds(), h.path, h.id, gracePeriod)
		}
	}
}

// asleepMarkers are the statuses of a gateway's answer for an app it must wake.
var asleepMarkers = map[string]bool{"Down": true, "WaitingForUp": true, "WaitingForShutdown": true}

// askBound is how long a wake may take: the fail timeout, and a margin.
const askBound = failTimeout + 5*time.Second

// checkAsksServed: every request the gateway answered as asleep (other than a
// monitor's) asked for a wake, so the app came up within askBound of it — of the
// stop that followed it, when it came while the app was being stopped — or the
// app went to Error with a cause. Excused: an ask through a node that a fault
// hit within half a second of it (cut off, it can neither store nor forward the
// ask; killed, it may not have), or made while redis-server was down.
func checkAsksServed(o *observation, c *checkResult) {
	stops := o.stops()
	for _, r := range o.results {
		if r.kind == kindMonitor || r.monitoring || !asleepMarkers[r.marker] {
			continue
		}
		c.checked++
		from, to := r.sent.Add(-500*time.Millisecond), r.sent.Add(500*time.Millisecond)
		if _, hit := o.nodeFault(r.node, from, to, nodeKindsAll...); hit || o.redisDown(from, to) {
			c.exempt++
			continue
		}
		since := r.sent
		for _, s := range stops {
			if s.app == r.app && !s.at.Before(r.sent) && s.at.Sub(r.sent) <= 3*time.Second {
				// Asked while the app was being stopped: woken after the stop (the
				// samples may show it up for one more interval).
				since = s.at.Add(2 * sampleEvery)
			}
		}
		// An Error entered just before the ask counts: the node that answered
		// had not seen it yet (a forced stop withdrawn to Error, kindErrorForced).
		if _, up := upBetween(o.lines[r.app], since, since.Add(askBound)); up || o.errorBetween(r.app, r.sent.Add(-time.Second), since.Add(askBound)) {
			continue
		}
		if o.end.Before(since.Add(askBound)) {
			c.undecided++
			continue
		}
		c.violate("app %d: asked by %s; not up within %s of %s, and no Error", r.app, o.describe(r), askBound, o.at(since))
	}
}

// errorBetween reports whether the app's history shows it going to Error, with a
// cause, during [from, to].
func (o *observation) errorBetween(app int, from, to time.Time) bool {
	for _, t := range o.history[app] {
		if t.To == "Error" && t.Cause != "" && !t.At.Before(from) && !t.At.After(to) {
			return true
		}
	}
	return false
}

// checkConverged: once every fault is undone and the traffic over, the cluster
// has one leader and every node gives every app the status the platform shows,
// within convergeBound.
func checkConverged(o *observation, c *checkResult) {
	c.checked++
	if o.converged.ok {
		return
	}
	var errs []string
	for i := range o.apps {
		if t, ok := o.lastTransition(i, "Error", o.end); ok {
			for _, tr := range o.history[i] {
				if tr.To == "Error" && tr.At.Equal(t) {
					errs = append(errs, fmt.Sprintf("app %d went to Error at %s from %s (%s)", i, o.at(t), tr.From, tr.Cause))
				}
			}
		}
	}
	c.violate("not settled %s after the faults: %s%s", convergeBound, o.converged.last, strings.Join(append([]string{""}, errs...), "; "))
}

package main

import (
	"net/http"
	"strings"
	"time"
)

// The invariants on what the clients got, and on what reached the apps.

// documentedHold are the gateway's answers to a request in hold mode, with their
// status (docs/reaper.md).
var documentedHold = map[string]int{
	"the application could not be started":                           http.StatusServiceUnavailable,
	"the application did not wake up in time":                        http.StatusGatewayTimeout,
	"too many requests are waiting for the application, retry later": http.StatusServiceUnavailable,
	"the gateway is restarting, retry":                               http.StatusServiceUnavailable,
	// The platform's "no instance" 404 (an app that crashed): a request that
	// reached the edge is not held any more; it gets the unavailable answer.
	"the application is waking up, retry later": http.StatusServiceUnavailable,
}

// shutdownRace is how close to a SIGTERM a request may come and find the
// listener closed.
const shutdownRace = 200 * time.Millisecond

// checkHeldAnswered: every request in hold mode got the app's answer, right, or a
// documented 503/504 with the marker. Excused: a request through a node that was
// killed meanwhile, or stopped by SIGTERM when it came too late to be held or was
// already at its app; a node cut off the network still has its clients, so it
// must answer them. 502s are the business of checkNo502.
func checkHeldAnswered(o *observation, c *checkResult) {
	for _, r := range o.results {
		if !r.kind.held() || r.status == http.StatusBadGateway {
			continue
		}
		c.checked++
		if r.fromApp && r.appOK || r.marker != "" && r.err == "" && documentedHold[r.errorText] == r.status {
			continue
		}
		c.judgeUnanswered(o, r)
	}
}

// judgeUnanswered excuses or violates a held request that got neither the app's
// answer nor a documented one, by the faults that hit its node meanwhile: a kill
// excuses it; a SIGTERM too, unless the node held it (then it owed a 503); a cut
// only when the answer had begun (a download cut off), since the node still had
// its clients.
func (c *checkResult) judgeUnanswered(o *observation, r result) {
	if _, killed := o.nodeFault(r.node, r.sent, r.end, kindLeaderKill, kindFollowerKill, kindOperatorKill); killed {
		c.exempt++
		return
	}
	if inj, stopped := o.nodeFault(r.node, r.sent, r.end, kindNodeTerm); stopped {
		if !r.fromApp && !o.reachedApp(r.id) && r.sent.Before(inj.at.Add(-shutdownRace)) {
			c.violate("%s; n%d was stopped (SIGTERM) at %s while holding it: want 503 with Retry-After: 1", o.describe(r), r.node+1, o.at(inj.at))
			return
		}
		c.exempt++
		return
	}
	if _, cut := o.nodeFault(r.node, r.sent, r.end, kindPartition); cut {
		if r.fromApp {
			c.exempt++
			return
		}
		c.violate("%s; n%d was cut off the cluster, not from its clients: it must answer", o.describe(r), r.node+1)
		return
	}
	c.violate("%s", o.describe(r))
}

// reachedApp reports whether the request id reached its app.
func (o *observation) reachedApp(id string) bool {
	for _, h := range o.hits {
		if h.id == id {
			return true
		}
	}
	return false
}

// heldMargin is what a hold may take beyond fail_timeout: the release's pace,
// the ready delay, the answer.
const heldMargin = 3 * time.Second

// checkHeldBounded: every request in hold mode had its answer's headers within
// fail_timeout plus heldMargin. Excused: a request that got no answer because its
// node was killed or stopped.
func checkHeldBounded(o *observation, c *checkResult) {
	for _, r := range o.results {
		if !r.kind.held() {
			continue
		}
		c.checked++
		took := r.headers.Sub(r.sent)
		if r.headers.IsZero() {
			took = r.end.Sub(r.sent)
		}
		if took <= failTimeout+heldMargin {
			continue
		}
		if _, hit := o.nodeFault(r.node, r.sent, r.end, killed...); hit && r.headers.IsZero() {
			c.exempt++
			continue
		}
		c.violate("%s", o.describe(r))
	}
}

// releaseLag is how long a node may take to release a held request once its app
// is up: the ready delay, a missed notification caught by the 2 s re-read, the
// release's pace.
const releaseLag = readyDelay + 3*time.Second

// checkNoTimeoutWhileUp: no held request got the 504 "did not wake up in time"
// more than releaseLag after its app was up: a node that holds a request for an
// app that is up has lost the news. Excused: a node that a fault hit, or
// redis-server down, between the app's wake and the 504.
func checkNoTimeoutWhileUp(o *observation, c *checkResult) {
	for _, r := range o.results {
		if !r.kind.held() || r.status != http.StatusGatewayTimeout || r.headers.IsZero() {
			continue
		}
		c.checked++
		upAt, up := upBetween(o.lines[r.app], r.sent, r.headers.Add(-releaseLag))
		if !up {
			continue
		}
		if _, hit := o.nodeFault(r.node, upAt, r.headers, nodeKindsAll...); hit || o.redisDown(upAt, r.headers) {
			c.exempt++
			continue
		}
		c.violate("%s; app %d was up from %s", o.describe(r), r.app, o.at(upAt))
	}
}

// partitionAftermath is how long after a node is reconnected its dials may still
// fail: seen once (seed 403708), a node's dial to an app's edge failed with "no
// route to host" 3 s after a request that came 2.3 s after the heal.
const partitionAftermath = 5 * time.Second

// checkNo502: no answer was a 502. The apps' edges never refuse a connection,
// and a crashed app's edge answers 404 with X-CleverCloudUpgrade, which reaper
// turns into its own answer: a 502 is reaper's. Excused: an answer from a node
// cut off the network (it cannot reach the apps), or reconnected less than
// partitionAftermath before the request.
func checkNo502(o *observation, c *checkResult) {
	for _, r := range o.results {
		c.checked++
		if r.status != http.StatusBadGateway {
			continue
		}
		if _, hit := o.nodeFault(r.node, r.sent.Add(-partitionAftermath), r.end, kindPartition); hit {
			c.exempt++
			continue
		}
		c.violate("%s", o.describe(r))
	}
}

// checkBodies: every POST that reached its app brought the body its client
// sent, whole; none reached it twice; and none whose client was answered by the
// gateway in the app's place (a 503, a 504) reached it at all (a client that
// retries must not have its POST executed twice).
func checkBodies(o *observation, c *checkResult) {
	seen := map[string]int{}
	for _, h := range o.hits {
		if h.path != "/post" || h.id == "" {
			continue
		}
		c.checked++
		if seen[h.id]++; seen[h.id] == 2 {
			c.violate("%s reached app %d twice (at %s the second time)", h.id, h.app, o.at(h.arrived))
		}
		if !h.bodyOK {
			c.violate("%s reached app %d at %s with %d bytes of another body (sha256 %.12s…)", h.id, h.app, o.at(h.arrived), h.bodyBytes, h.bodySHA)
		}
		if r, ok := o.resultOf(h.id); ok && r.marker != "" {
			c.violate("%s reached app %d at %s, but its client got the gateway's answer: %s", h.id, h.app, o.at(h.arrived), o.describe(r))
		}
	}
}

// checkOtherAnswers: every request not held (monitors, browsers, the
// unavailable mode) got the app's answer or the documented one: a monitor 200
// {"monitoring": true}, a browser the 503 waiting page, an API call in
// unavailable mode 503 with Retry-After; a node shutting down may answer any
// 503 "restarting". Excused: no answer from a node killed or stopped meanwhile.
func checkOtherAnswers(o *observation, c *checkResult) {
	for _, r := range o.results {
		if r.kind.held() || r.status == http.StatusBadGateway {
			continue
		}
		c.checked++
		if r.fromApp && r.appOK || documentedOther(r) {
			continue
		}
		if _, hit := o.nodeFault(r.node, r.sent, r.end, killed...); hit && r.headers.IsZero() {
			c.exempt++
			continue
		}
		c.violate("%s", o.describe(r))
	}
}

// documentedOther reports whether r is the gateway's documented answer for its
// kind.
func documentedOther(r result) bool {
	switch {
	case r.marker == "" || r.err != "":
		return false
	case r.status == http.StatusServiceUnavailable && r.errorText == "the gateway is restarting, retry":
		return r.retryAfter == "1"
	case r.kind == kindMonitor:
		return r.status == http.StatusOK && r.monitoring
	case r.kind == kindBrowser:
		return r.status == http.StatusServiceUnavailable && strings.HasPrefix(r.contentType, "text/html") && r.retryAfter != ""
	case r.kind == kindAPIUnavailable:
		return r.status == http.StatusServiceUnavailable && r.errorText == "the application is waking up, retry later" && r.retryAfter != ""
	}
	return false
}

package reaper

import (
	"cmp"

	"github.com/reapergw/reaper/paas"
)

// What an app says of its own policy (paas.PolicyHinter: a container's
// reaper.grace_period label) and how it meets the policy its routes merged.

// applyHint returns the app's effective policy: p, the routes' merged policy,
// with the app's own grace period when it sets one. The app's wins, longer or
// shorter, because its owner set it for this app alone, where a route's is a
// default for whatever the route serves. The app's busy_url (and busy_max)
// applies only when no route of it sets one: a route-less group member has
// no other way to get one. A hint that cannot be read (err) changes nothing
// it could not read, and is returned as problem for the operators. from says where the grace period came from, when from the hint.
// Pure.
func applyHint(p Policy, h paas.PolicyHint, err error) (_ Policy, from, problem string) {
	if h.GracePeriod > 0 {
		p.GracePeriod, from = h.GracePeriod, h.From
	}
	if p.BusyURL == "" && h.BusyURL != "" {
		// A route's busy_url wins: its busy_max goes with it.
		p.BusyURL, p.BusyMax = h.BusyURL, cmp.Or(h.BusyMax, DefaultBusyMax)
	}
	if err != nil {
		problem = err.Error()
	}
	return p, from, problem
}

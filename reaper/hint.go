package reaper

import (
	"cmp"

	"github.com/reapergw/reaper/paas"
)

// What an app says of its own policy (paas.PolicyHinter: a container's
// reaper.grace_period label) and how it meets the policy its routes merged.

// applyHint returns the app m with its effective policy: m.Policy, the
// routes' merged policy, with the app's own grace period when it sets one
// (GraceFrom says where from). The app's wins, longer or shorter, because its
// owner set it for this app alone, where a route's is a default for whatever
// the route serves. The app's busy_url (and busy_max) applies only when no
// route of it sets one (BusyFrom is then the hint's, or "driver hint"): a
// route-less group member has no other way to get one. A hint that cannot be
// read (err) changes nothing it could not read, and is returned as
// PolicyProblem for the operators. Pure.
func applyHint(m ManagedApp, h paas.PolicyHint, err error) ManagedApp {
	if h.GracePeriod > 0 {
		m.Policy.GracePeriod, m.GraceFrom = h.GracePeriod, h.From
	}
	if m.Policy.BusyURL == "" && h.BusyURL != "" {
		// A route's busy_url wins: its busy_max goes with it.
		m.Policy.BusyURL, m.Policy.BusyMax = h.BusyURL, cmp.Or(h.BusyMax, DefaultBusyMax)
		m.BusyFrom = cmp.Or(h.BusyFrom, "driver hint")
	}
	if err != nil {
		m.PolicyProblem = err.Error()
	}
	return m
}

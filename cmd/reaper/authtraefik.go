package main

import (
	"sort"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/reaper"
)

// traefikLabeled returns the ids of the routes that manage an app whose driver
// says it asks for Traefik (a container's reaper.traefik=true label), sorted
// and each once: the routes /traefik gives besides node.auth_traefik_routes.
// The hints are the driver's memory: it never waits on the platform.
func traefikLabeled(apps []reaper.ManagedApp, hints paas.PolicyHinter) []string {
	if hints == nil {
		return nil
	}
	seen := map[string]bool{}
	var ids []string
	for _, a := range apps {
		if h, _ := hints.AppPolicy(a.App); !h.Traefik {
			continue // an unreadable label is logged by the driver and shown by the admin API
		}
		for _, id := range a.Routes {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// authTraefikLabeled is traefikLabeled over the apps the node's routes manage
// now, for the forward-auth listener's /traefik.
func (n *node) authTraefikLabeled() []string {
	h, _ := n.parts.driver.(paas.PolicyHinter)
	return traefikLabeled(n.parts.engine.Managed(), h)
}

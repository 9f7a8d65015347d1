package main

import (
	"reflect"

	"github.com/reapergw/reaper/config"
)

// restartNeeded lists the settings that differ between two configurations and that
// a reload does not apply (listeners, store, platform, cluster, events): only
// routes and their plugins are swapped live.
func restartNeeded(old, cur *config.Config) []string {
	var out []string
	for _, c := range []struct {
		name string
		a, b any
	}{
		{"node", old.Node, cur.Node},
		{"reaper", old.Reaper, cur.Reaper},
		{"paas", old.PaaS, cur.PaaS},
		{"store", old.Store, cur.Store},
		{"cluster", old.Cluster, cur.Cluster},
		{"events", old.Events, cur.Events},
		{"tcp_routes", old.TCPRoutes, cur.TCPRoutes},
		{"triggers", old.Triggers, cur.Triggers},
	} {
		if !reflect.DeepEqual(c.a, c.b) {
			out = append(out, c.name)
		}
	}
	return out
}

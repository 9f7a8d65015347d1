package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reapergw/reaper/reaper"
)

// The groups (groups[]): which app is in which group, and how many of a
// group's members are up, read from the engine at scrape time. The group and
// app labels come from the configuration.

var (
	descGroupMember = prometheus.NewDesc("reaper_group_member", "1 for each app of a group (groups[]): join it with reaper_app_status on app.",
		[]string{"group", "app"}, nil)
	descGroupMembers   = prometheus.NewDesc("reaper_group_members", "The apps of the group.", []string{"group"}, nil)
	descGroupMembersUp = prometheus.NewDesc("reaper_group_members_up", "The group's apps that are Up, as this node last saw them.", []string{"group"}, nil)
)

type groupCollector struct{ e *reaper.Engine }

func (c groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGroupMember
	ch <- descGroupMembers
	ch <- descGroupMembersUp
}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.e.Groups() {
		up := 0
		for _, id := range g.Apps {
			ch <- prometheus.MustNewConstMetric(descGroupMember, prometheus.GaugeValue, 1, g.ID, id)
			if rec, ok := c.e.Record(id); ok && rec.Status == reaper.StatusUp {
				up++
			}
		}
		ch <- prometheus.MustNewConstMetric(descGroupMembers, prometheus.GaugeValue, float64(len(g.Apps)), g.ID)
		ch <- prometheus.MustNewConstMetric(descGroupMembersUp, prometheus.GaugeValue, float64(up), g.ID)
	}
}

package dashboard

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/reapergw/reaper/reaper"
)

// groupRow is a group as the apps page shows it: its view, and its members'
// rows in start order.
type groupRow struct {
	reaper.GroupView
	Members []appRow
	Up      int
}

// loadGroups reads the groups; an API without them (an older node) is no
// group, not an error.
func (d *Dashboard) loadGroups(ctx context.Context) ([]reaper.GroupView, string) {
	gs, err := d.api.Groups(ctx)
	switch {
	case isNotFound(err):
		return nil, ""
	case err != nil:
		return nil, errText(err)
	}
	return gs, ""
}

// groupRows joins each group with the rows of its members.
func groupRows(gs []reaper.GroupView, apps []appRow) []groupRow {
	byID := make(map[string]appRow, len(apps))
	for _, a := range apps {
		byID[a.AppID] = a
	}
	out := make([]groupRow, 0, len(gs))
	for _, g := range gs {
		r := groupRow{GroupView: g}
		for _, m := range g.Members {
			row, ok := byID[m.AppID]
			if !ok {
				row = appRow{AppView: m}
			}
			if row.Status == reaper.StatusUp {
				r.Up++
			}
			r.Members = append(r.Members, row)
		}
		out = append(out, r)
	}
	return out
}

// orderText is a group's start order, as "api → web → worker".
func orderText(apps []string) string { return strings.Join(apps, " → ") }

// isGroupAnswer reports whether raw is the answer to an action on a group's id.
func isGroupAnswer(raw []byte) bool {
	var g reaper.GroupActionAnswer
	return json.Unmarshal(raw, &g) == nil && g.GroupID != ""
}

package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/reaper"
)

// Group is a groups[] entry: apps that wake together and sleep together
// (docs/groups-and-workers.md).
type Group struct {
	// ID names the group in the CLI, the admin API and the dashboard: letters,
	// digits, '.', '-' and '_', never the id of an app.
	ID string `yaml:"id"`
	// Apps are the members: each an app a driver owns, in one group at most.
	Apps []string `yaml:"apps"`
	// MustBeUpAt are keep-up windows of the whole group (the reaper plugin's
	// must_be_up_at), in Timezone (default reaper.DefaultTimezone): every
	// member has them, besides its routes' own.
	MustBeUpAt []reaper.RangeConfig `yaml:"must_be_up_at"`
	Timezone   string               `yaml:"timezone"`

	mustBeUp []reaper.Range
}

// maxGroupApps bounds a group's members.
const maxGroupApps = 64

// Validate checks one group on its own; checkGroups the rest.
func (g *Group) Validate(path string, errs *conf.Errors) {
	switch {
	case g.ID == "":
		errs.Add(conf.Key(path, "id"), "is required")
	case len(g.ID) > 64 || strings.IndexFunc(g.ID, badIDRune) >= 0:
		errs.Add(conf.Key(path, "id"), "%s: use at most 64 letters, digits, '.', '-' and '_'", strconv.Quote(g.ID))
	}
	switch {
	case len(g.Apps) == 0:
		errs.Add(conf.Key(path, "apps"), "is required: the ids of the apps that wake and sleep together")
	case len(g.Apps) > maxGroupApps:
		errs.Add(conf.Key(path, "apps"), "has %d apps: at most %d", len(g.Apps), maxGroupApps)
	}
	g.validateWindows(path, errs)
	seen := map[string]int{}
	for i, id := range g.Apps {
		p := conf.Index(conf.Key(path, "apps"), i)
		if id == "" {
			errs.Add(p, "is empty: an app id is required")
			continue
		}
		if j, dup := seen[id]; dup {
			errs.Add(p, "%s is already %s", strconv.Quote(id), conf.Index(conf.Key(path, "apps"), j))
			continue
		}
		seen[id] = i
	}
}

// validateWindows reads must_be_up_at in the group's time zone.
func (g *Group) validateWindows(path string, errs *conf.Errors) {
	tz := g.Timezone
	if tz == "" {
		tz = reaper.DefaultTimezone
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
		errs.Add(conf.Key(path, "timezone"), "%s is not a known time zone (use an IANA name such as Europe/Paris)", strconv.Quote(g.Timezone))
		tz = ""
	}
	g.mustBeUp = g.mustBeUp[:0]
	for i, rc := range g.MustBeUpAt {
		at := conf.Index(conf.Key(path, "must_be_up_at"), i)
		r, rerrs := reaper.ParseRangeAll(rc.Days, rc.Start, rc.End, tz)
		for _, e := range rerrs {
			field := conf.Key(at, e.Field)
			if e.Field == "days" {
				field = conf.Index(field, e.Index)
			}
			errs.Add(field, "%s", e.Error())
		}
		if len(rerrs) == 0 {
			g.mustBeUp = append(g.mustBeUp, r)
		}
	}
}

func badIDRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
}

// checkGroups checks what spans groups and the rest of the file: each group id
// once and never an app's id, each member an app a driver may own, and in one
// group at most. It adds the members to managed: a member needs no route.
func (c *Config) checkGroups(managed map[string]bool, errs *conf.Errors) {
	own := c.staticOwners()
	ids := map[string]int{}
	groupOf := map[string]string{}
	for i, g := range c.Groups {
		path := conf.Index("groups", i)
		if j, dup := ids[g.ID]; dup && g.ID != "" {
			errs.Add(conf.Key(path, "id"), "%s is already the id of %s", strconv.Quote(g.ID), conf.Index("groups", j))
		} else {
			ids[g.ID] = i
		}
		for k, app := range g.Apps {
			p := conf.Index(conf.Key(path, "apps"), k)
			switch {
			case app == "":
			case !managed[app] && !own.claims(app):
				errs.Add(p, "%s%s", strconv.Quote(app), own.unclaimed(app))
			case groupOf[app] != "" && groupOf[app] != path:
				errs.Add(p, "%s is already in %s: an app is in one group at most", strconv.Quote(app), groupOf[app])
			}
			if groupOf[app] == "" {
				groupOf[app] = path
			}
		}
	}
	// Once every member is known: a group id must name no app, so that a wake,
	// a sleep or a hold names one thing.
	for i, g := range c.Groups {
		if managed[g.ID] || own.known[g.ID] || groupOf[g.ID] != "" {
			errs.Add(conf.Key(conf.Index("groups", i), "id"), "%s is the id of an app: a group's id must differ from every app's", strconv.Quote(g.ID))
		}
	}
	for _, g := range c.Groups {
		for _, app := range g.Apps {
			if app != "" {
				managed[app] = true
			}
		}
	}
}

// ReaperGroups returns the groups as the engine takes them.
func (c *Config) ReaperGroups() []reaper.Group {
	out := make([]reaper.Group, 0, len(c.Groups))
	for _, g := range c.Groups {
		out = append(out, reaper.Group{ID: g.ID, Apps: append([]string(nil), g.Apps...), MustBeUp: append([]reaper.Range(nil), g.mustBeUp...)})
	}
	return out
}

// DependsOn returns each declared app's depends_on: paas.apps[] (process) and
// paas.docker.apps[] (containers declared in the file; the reaper.depends_on
// labels of discovered containers reach the engine through the driver's
// paas.PolicyHint). The engine honours it for every driver.
func (c *Config) DependsOn() map[string][]string {
	out := map[string][]string{}
	for _, a := range c.PaaS.Apps {
		if len(a.DependsOn) > 0 {
			out[a.ID] = append([]string(nil), a.DependsOn...)
		}
	}
	if c.PaaS.Docker != nil {
		for _, a := range c.PaaS.Docker.Apps {
			if len(a.DependsOn) > 0 {
				out[a.ID] = append([]string(nil), a.DependsOn...)
			}
		}
	}
	return out
}

// checkDependsOn checks paas.apps[].depends_on: each id an app a driver may
// own, never the app itself, no cycle (paas.docker.apps checks its own).
func (c *Config) checkDependsOn(errs *conf.Errors) {
	own := c.staticOwners()
	deps := map[string][]string{}
	for i, a := range c.PaaS.Apps {
		path := conf.Key(conf.Index("paas.apps", i), "depends_on")
		for k, d := range a.DependsOn {
			switch {
			case d == a.ID:
				errs.Add(conf.Index(path, k), "an app cannot depend on itself")
			case !own.claims(d):
				errs.Add(conf.Index(path, k), "%s%s", strconv.Quote(d), own.unclaimed(d))
			}
		}
		deps[a.ID] = a.DependsOn
	}
	if cycle := reaper.DependencyCycle(deps); cycle != nil {
		errs.Add("paas.apps", "depends_on makes a cycle: %s", strings.Join(cycle, " → "))
	}
}

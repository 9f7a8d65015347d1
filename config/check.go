package config

import (
	"net/url"
	"strconv"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas/clevercloud"
	"github.com/reapergw/reaper/paas/process"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/reaper"
)

// check runs the checks that span sections: the driver's own section, the routes
// and their plugins, which apps the reaper plugin names, the cluster's needs.
func (c *Config) check(d *conf.Decoder, errs *conf.Errors) {
	switch c.PaaS.Driver {
	case DriverProcess:
		process.ValidateApps(c.PaaS.Apps, "paas.apps", errs)
		if c.PaaS.CleverCloud != nil {
			errs.Add("paas.clevercloud", "is only read with driver clevercloud (the driver is process)")
		}
	case DriverCleverCloud:
		if c.PaaS.CleverCloud == nil {
			errs.Add("paas.clevercloud", "is required with driver clevercloud (a token or oauth credentials)")
		}
		if len(c.PaaS.Apps) > 0 {
			errs.Add("paas.apps", "is only read with driver process (the driver is clevercloud)")
		}
	default:
		errs.Add("paas.driver", "%s is not a driver (use process or clevercloud)", strconv.Quote(c.PaaS.Driver))
	}

	if c.Cluster != nil {
		if c.Store.Driver != StoreValkey {
			errs.Add("store.driver", "must be valkey in a cluster: the nodes share their state through it")
		}
		if c.PaaS.Driver == DriverProcess {
			errs.Add("paas.driver", "process runs apps on one machine, which no other node can see: a cluster needs a shared platform (clevercloud)")
		}
	}

	plugin.ValidateRoutes(c.Routes, "routes", errs)
	c.checkReaperApps(d, errs)
}

// checkReaperApps checks that every route with the reaper plugin names an app the
// driver knows (process) or can guess it (Clever Cloud), so that a typo is a
// configuration error rather than an app that never wakes.
func (c *Config) checkReaperApps(d *conf.Decoder, errs *conf.Errors) {
	known := map[string]bool{}
	for _, a := range c.PaaS.Apps {
		known[a.ID] = true
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		for j := range r.Plugins {
			pc := &r.Plugins[j]
			if pc.Plugin != reaper.PluginID {
				continue
			}
			path := conf.Key(conf.Index(conf.Key(conf.Index("routes", i), "plugins"), j), "config")
			rc := reaper.DefaultConfig()
			var scratch conf.Errors // its errors were reported by ValidateRoutes
			d.Decode(&pc.Config, &rc, path, &scratch)
			switch {
			case c.PaaS.Driver == DriverCleverCloud && rc.AppID == "":
				if _, ok := guessAppID(r.Backend.Targets); !ok {
					errs.Add(conf.Key(path, "app_id"), "is required (no backend target is an app-<uuid>.cleverapps.io domain to guess it from)")
				}
			case rc.AppID == "":
				errs.Add(conf.Key(path, "app_id"), "is required")
			case c.PaaS.Driver == DriverProcess && !known[rc.AppID]:
				errs.Add(conf.Key(path, "app_id"), "%s is not an app of paas.apps", strconv.Quote(rc.AppID))
			}
		}
	}
}

// guessAppID finds a Clever Cloud app id in a route's backend targets.
func guessAppID(targets []plugin.Target) (string, bool) {
	for _, t := range targets {
		if u, err := url.Parse(t.URL); err == nil {
			if id, ok := clevercloud.GuessAppID(u.Hostname()); ok {
				return id, true
			}
		}
	}
	return "", false
}

// GuessAppID finds a Clever Cloud app id in a route's backend targets, for routes
// whose reaper plugin does not name its app.
func GuessAppID(r *plugin.RouteConfig) (string, bool) { return guessAppID(r.Backend.Targets) }

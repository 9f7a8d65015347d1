package config

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/reapergw/reaper/internal/conf"
)

// An app's busy_url may be given twice: by a route (its reaper plugin's
// config) and by the app's own driver entry (paas.apps[], paas.docker.apps[],
// paas.kubernetes.apps[]). The route's wins, which surprises whoever set the
// app's; reaper check says so. The labels and annotations that give an app a
// busy_url are read at run time, so only the file's entries can be compared
// here.

// appBusy is a busy_url the file gives an app, and where.
type appBusy struct {
	app, path, url string
}

// busyWarnings compares each app's declared busy_url with its routes'.
func (c *Config) busyWarnings() []string {
	var declared []appBusy
	p := &c.PaaS
	if p.Driver.Has(DriverProcess) {
		for i, a := range p.Apps {
			declared = append(declared, appBusy{a.ID, conf.Key(conf.Index("paas.apps", i), "busy_url"), a.BusyURL})
		}
	}
	if p.Driver.Has(DriverDocker) && p.Docker != nil {
		for i, a := range p.Docker.Apps {
			declared = append(declared, appBusy{a.ID, conf.Key(conf.Index("paas.docker.apps", i), "busy_url"), a.BusyURL})
		}
	}
	if p.Driver.Has(DriverKubernetes) && p.Kubernetes != nil {
		for i, a := range p.Kubernetes.Apps {
			declared = append(declared, appBusy{a.ID, conf.Key(conf.Index("paas.kubernetes.apps", i), "busy_url"), a.BusyURL})
		}
	}
	return busyDisagreements(c.routeBusy, declared)
}

// busyDisagreements says, for each app whose route's busy_url differs from
// its declared one, which field holds which and which one is used, in the
// order of the declarations. The URLs are shown without their query (it may
// hold a token). Pure.
func busyDisagreements(routes busyURLs, declared []appBusy) []string {
	var out []string
	for _, d := range declared {
		r, ok := routes[d.app]
		if d.url == "" || !ok || r.addr == d.url {
			continue
		}
		rs, ds, query := shownURL(r.addr), shownURL(d.url), ""
		if rs == ds {
			query = "; they differ in their query, not shown"
		}
		out = append(out, fmt.Sprintf("%s: %s differs from the busy_url of app %s at %s, %s%s: the route's is used, "+
			"with the route's busy_max (a route's busy_url wins over the app's own)",
			r.path, rs, strconv.Quote(d.app), d.path, ds, query))
	}
	return out
}

// shownURL is a busy_url as a warning may show it: scheme, host and path,
// without the query (it may hold a token). The URLs were checked: they parse.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a bad URL)"
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

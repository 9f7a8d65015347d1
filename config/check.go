package config

import (
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/paas/clevercloud"
	"github.com/reapergw/reaper/paas/docker"
	"github.com/reapergw/reaper/paas/kubernetes"
	"github.com/reapergw/reaper/paas/process"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/tcproute"
	"github.com/reapergw/reaper/trigger"
)

// check runs the checks that span sections: the driver's own section, the routes
// and their plugins, which apps the reaper plugin names, the cluster's needs.
func (c *Config) check(d *conf.Decoder, errs *conf.Errors) {
	c.checkDriver(errs)

	if c.Cluster != nil {
		if c.Store.Driver != StoreValkey {
			errs.Add("store.driver", "must be valkey in a cluster: the nodes share their state through it")
		}
		if c.PaaS.Driver.Has(DriverProcess) {
			errs.Add("paas.driver", "process runs apps on one machine, which no other node can see: a cluster needs a shared platform (clevercloud, or docker engines every node reaches)")
		}
		if c.Cluster.TLS != nil {
			c.checkClusterTLS(errs)
		}
	}

	if t := c.Node.TLS; t != nil && t.ACME != nil {
		c.checkACMEListen(errs)
	}
	plugin.ValidateRoutes(c.Routes, "routes", errs)
	managed := c.checkReaperApps(d, errs)
	c.checkTCPRoutes(managed, errs)
	c.checkGroups(managed, errs)
	c.checkDependsOn(errs)
	c.checkWebhookApps(managed, errs)
	c.checkTraefikRoutes(errs)
	c.checkTriggers(managed, errs)
}

// checkTriggers checks the triggers together: each wakes an app that a route
// manages, or a group.
func (c *Config) checkTriggers(managed map[string]bool, errs *conf.Errors) {
	groups := map[string]bool{}
	for _, g := range c.Groups {
		groups[g.ID] = true
	}
	trigger.CheckAll(c.Triggers, "triggers", func(id string) bool { return managed[id] || groups[id] }, errs)
}

// checkTraefikRoutes checks that the routes given to Traefik exist, and that
// the forward-auth listener they go through is on.
func (c *Config) checkTraefikRoutes(errs *conf.Errors) {
	if len(c.Node.AuthTraefikRoutes) > 0 && c.Node.AuthListen == "" {
		errs.Add("node.auth_traefik_routes", "needs node.auth_listen: Traefik reaches reaper there")
	}
	ids := map[string]bool{}
	for _, r := range c.Routes {
		ids[r.ID] = true
	}
	for i, id := range c.Node.AuthTraefikRoutes {
		if !ids[id] {
			errs.Add(conf.Index("node.auth_traefik_routes", i), "%s is not the id of a route", strconv.Quote(id))
		}
	}
}

// checkACMEListen checks that node.tls.acme.http_listen is not the address of
// another listener of the node.
func (c *Config) checkACMEListen(errs *conf.Errors) {
	h := c.Node.TLS.ACME.HTTPListen
	for _, o := range []addrAt{{"node.listen", c.Node.Listen}, {"node.admin_listen", c.Node.AdminListen}} {
		if o.addr != "" && h == o.addr {
			errs.Add("node.tls.acme.http_listen", "%s is %s too: the challenges and redirects need a listener of their own", strconv.Quote(h), o.path)
		}
	}
}

// checkWebhookApps checks that the apps a webhook filters on are apps of the
// routes: a typo would be a webhook that never hears of the app.
func (c *Config) checkWebhookApps(managed map[string]bool, errs *conf.Errors) {
	for i, h := range c.Events.Webhooks {
		for j, app := range h.Apps {
			if app != "" && !managed[app] && !(managed[foundAtStart] && strings.HasPrefix(app, "app_")) {
				errs.Add(conf.Index(conf.Key(conf.Index("events.webhooks", i), "apps"), j),
					"%s is not the app_id of any route's reaper plugin", strconv.Quote(app))
			}
		}
	}
}

// checkDriver checks that the drivers are known and that only their own
// sections are given.
func (c *Config) checkDriver(errs *conf.Errors) {
	p := &c.PaaS
	for _, name := range p.Driver.Names() {
		switch name {
		case DriverProcess:
			process.ValidateApps(p.Apps, "paas.apps", errs)
		case DriverCleverCloud:
			if p.CleverCloud == nil {
				errs.Add("paas.clevercloud", "is required with driver clevercloud (a token or oauth credentials)")
			}
		case DriverDocker, DriverKubernetes:
		default:
			if !p.Driver.Multi() { // a list's names were checked as it was decoded
				errs.Add("paas.driver", "%s is not a driver (use process, clevercloud, docker or kubernetes)", strconv.Quote(string(p.Driver)))
			}
			return
		}
	}
	if p.Driver == "" {
		return // an empty list, reported as it was decoded
	}
	if len(p.Apps) > 0 && !p.Driver.Has(DriverProcess) {
		hint := ""
		if p.Driver.Has(DriverDocker) {
			hint = "; containers go under paas.docker.apps"
		}
		if p.Driver.Has(DriverKubernetes) {
			hint = "; workloads go under paas.kubernetes.apps"
		}
		errs.Add("paas.apps", "is only read with driver process (%s%s)", p.Driver.describe(), hint)
	}
	if p.CleverCloud != nil && !p.Driver.Has(DriverCleverCloud) {
		errs.Add("paas.clevercloud", "is only read with driver clevercloud (%s)", p.Driver.describe())
	}
	if p.Docker != nil && !p.Driver.Has(DriverDocker) {
		errs.Add("paas.docker", "is only read with driver docker (%s)", p.Driver.describe())
	}
	if p.Kubernetes != nil && !p.Driver.Has(DriverKubernetes) {
		errs.Add("paas.kubernetes", "is only read with driver kubernetes (%s)", p.Driver.describe())
	}
	c.checkTwiceDeclared(errs)
}

// checkTwiceDeclared checks that no app id is declared both in paas.apps and in
// paas.docker.apps: each app has one driver.
func (c *Config) checkTwiceDeclared(errs *conf.Errors) {
	p := &c.PaaS
	if !p.Driver.Has(DriverProcess) || !p.Driver.Has(DriverDocker) || p.Docker == nil {
		return
	}
	procs := map[string]int{}
	for i, a := range p.Apps {
		procs[a.ID] = i
	}
	for j, a := range p.Docker.Apps {
		if i, ok := procs[a.ID]; ok && a.ID != "" {
			errs.Add(conf.Key(conf.Index("paas.docker.apps", j), "id"), "%s is already the id of %s: an app has one driver", strconv.Quote(a.ID), conf.Index("paas.apps", i))
		}
	}
}

// checkClusterTLS loads cluster.tls as the node will at start, and checks that
// its certificate names the hosts the other nodes dial to reach this node: they
// refuse it otherwise (see leader.TLS).
func (c *Config) checkClusterTLS(errs *conf.Errors) {
	t := c.Cluster.TLS
	loaded, err := leader.LoadTLS(t.Cert, t.Key, t.CA)
	if err != nil {
		errs.AddError("cluster.tls", err)
		return
	}
	seen := map[string]bool{}
	for _, a := range c.dialledAddrs() {
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil || seen[host] {
			continue // a bad address is reported at its own path
		}
		seen[host] = true
		if !loaded.Covers(host) {
			names := "no host"
			if n := loaded.Names(); len(n) > 0 {
				names = strings.Join(n, ", ")
			}
			errs.Add("cluster.tls.cert", "does not name %s, the host of %s, which the other nodes dial (it names %s)", host, a.path, names)
		}
	}
}

// addrAt is an address of the configuration and its path.
type addrAt struct{ path, addr string }

// dialledAddrs are the addresses the other nodes dial to reach this node, when
// the file says them: its raft_addr and api_addr in cluster.peers; for a node not
// in its own peers (one that waits to join), cluster.advertise (else
// cluster.raft_listen) and node.admin_listen, unless they listen on every address.
func (c *Config) dialledAddrs() []addrAt {
	for i, p := range c.Cluster.Peers {
		if p.ID == c.Node.ID {
			pp := conf.Index("cluster.peers", i)
			return []addrAt{{conf.Key(pp, "raft_addr"), p.RaftAddr}, {conf.Key(pp, "api_addr"), p.APIAddr}}
		}
	}
	raft := addrAt{"cluster.raft_listen", c.Cluster.RaftListen}
	if c.Cluster.Advertise != "" {
		raft = addrAt{"cluster.advertise", c.Cluster.Advertise}
	}
	var out []addrAt
	for _, a := range []addrAt{raft, {"node.admin_listen", c.Node.AdminListen}} {
		if host, _, err := net.SplitHostPort(a.addr); err == nil && !anyAddress(host) {
			out = append(out, a)
		}
	}
	return out
}

// anyAddress reports whether a listen address's host means every address.
func anyAddress(host string) bool {
	ip, err := netip.ParseAddr(host)
	return host == "" || err == nil && ip.IsUnspecified()
}

// checkReaperApps checks that every route with the reaper plugin names an app the
// driver knows (process) or can guess it (Clever Cloud), so that a typo is a
// configuration error rather than an app that never wakes. It returns the apps
// the routes manage.
func (c *Config) checkReaperApps(d *conf.Decoder, errs *conf.Errors) map[string]bool {
	managed := map[string]bool{}
	busy := busyURLs{}
	c.routeBusy = busy // for Warnings
	own := c.staticOwners()
	for i := range c.Routes {
		r := &c.Routes[i]
		firstReaper := -1
		for j := range r.Plugins {
			pc := &r.Plugins[j]
			if pc.Plugin != reaper.PluginID {
				continue
			}
			plugins := conf.Key(conf.Index("routes", i), "plugins")
			if firstReaper >= 0 {
				errs.Add(conf.Index(plugins, j), "is a second reaper plugin on the route (the first is %s): one app per route", conf.Index(plugins, firstReaper))
				continue
			}
			firstReaper = j
			path := conf.Key(conf.Index(plugins, j), "config")
			rc := reaper.DefaultConfig()
			var scratch conf.Errors // its errors were reported by ValidateRoutes
			d.Decode(&pc.Config, &rc, path, &scratch)
			managed[rc.AppID] = true
			busy.check(rc.AppID, rc.BusyURL, path, errs)
			switch {
			case c.PaaS.Driver.Has(DriverCleverCloud) && rc.AppID == "":
				switch id, ok := guessAppID(r.Backend.Targets); {
				case ok:
					managed[id] = true
				case hasExactDomain(r.Frontend.Domains):
					// Found at start among the apps' vhosts: its id is not known here.
					managed[foundAtStart] = true
				default:
					errs.Add(conf.Key(path, "app_id"), "is required (no backend target is an app-<uuid>.cleverapps.io domain to guess it from, and no frontend domain is an exact host to look up among the apps' vhosts)")
				}
			case rc.AppID == "":
				errs.Add(conf.Key(path, "app_id"), "is required")
			case !own.claims(rc.AppID):
				errs.Add(conf.Key(path, "app_id"), "%s%s", strconv.Quote(rc.AppID), own.unclaimed(rc.AppID))
			}
		}
	}
	return managed
}

// owners is what the file says of which driver may own an app id.
type owners struct {
	known       map[string]bool // declared in paas.apps or paas.docker.apps
	sections    []string        // where the ids are declared
	anyID       bool            // any id goes (one driver: clevercloud, or docker with labels)
	labels      bool            // docker discovers apps from labels (several drivers)
	cleverCloud bool            // clevercloud is listed among several drivers: app_… ids go
	dockerOff   bool            // docker is listed, with paas.docker.labels off
	kubeOff     bool            // kubernetes is listed, with paas.kubernetes.annotations off
}

// staticOwners reads the drivers' sections. With one driver, it says what that
// driver alone has always accepted.
func (c *Config) staticOwners() *owners {
	p := &c.PaaS
	o := &owners{known: map[string]bool{}}
	if p.Driver.Has(DriverProcess) {
		o.sections = append(o.sections, "paas.apps")
		for _, a := range p.Apps {
			o.known[a.ID] = true
		}
	}
	if p.Driver.Has(DriverDocker) {
		// Docker apps may also be discovered from labels at run time: then any id
		// goes, and an unknown one is an app the driver does not find.
		dc := p.Docker
		if dc == nil {
			dc = &docker.Config{}
		}
		o.sections = append(o.sections, "paas.docker.apps")
		for _, id := range dc.AppIDs() {
			o.known[id] = true
		}
		o.labels, o.dockerOff = dc.LabelsOn(), !dc.LabelsOn()
	}
	if p.Driver.Has(DriverKubernetes) {
		// Workloads may be discovered from annotations at run time too.
		kc := p.Kubernetes
		if kc == nil {
			kc = &kubernetes.Config{}
		}
		o.sections = append(o.sections, "paas.kubernetes.apps")
		for _, id := range kc.AppIDs() {
			o.known[id] = true
		}
		o.labels = o.labels || kc.AnnotationsOn()
		o.kubeOff = !kc.AnnotationsOn()
	}
	o.cleverCloud = p.Driver.Has(DriverCleverCloud)
	if !p.Driver.Multi() {
		o.anyID = !p.Driver.Has(DriverProcess) && !o.dockerOff && !o.kubeOff
	}
	return o
}

// claims reports whether a driver may own the app id.
func (o *owners) claims(id string) bool {
	return o.anyID || o.known[id] || o.labels || o.cleverCloud && strings.HasPrefix(id, "app_")
}

// unclaimed says why no driver owns the app id.
func (o *owners) unclaimed(id string) string {
	msg := " is not an app of " + strings.Join(o.sections, " or ")
	if o.dockerOff {
		msg += " (and paas.docker.labels is off)"
	}
	if o.kubeOff {
		msg += " (and paas.kubernetes.annotations is off)"
	}
	if o.cleverCloud {
		msg += ", nor a Clever Cloud app id (app_<uuid>)"
	}
	return msg + didYouMean(id, o.known)
}

// foundAtStart stands in the managed apps for the apps that routes find at
// start by their domains: any Clever Cloud app id may then be one of them.
const foundAtStart = "\x00found at start"

// hasExactDomain reports whether a route has a domain that is not a wildcard,
// which the Clever Cloud driver can look up among the apps' vhosts.
func hasExactDomain(domains []string) bool {
	for _, d := range domains {
		if !strings.HasPrefix(d, "*") && strings.TrimSpace(d) != "" {
			return true
		}
	}
	return false
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

// didYouMean suggests the known name closest to name (two edits away at
// most), as ` (did you mean "x"?)`, or "".
func didYouMean(name string, known map[string]bool) string {
	if name == "" {
		return ""
	}
	best := conf.Closest(name, slices.Sorted(maps.Keys(known)), 2)
	if best == "" {
		return ""
	}
	return " (did you mean " + strconv.Quote(best) + "?)"
}

// DockerReadiness says, for reaper check, what each start of a container app
// will probe (paas.docker: one line per declared app, and one for the apps
// discovered from labels); nil without the docker driver. env reads
// DOCKER_HOST, as the driver does.
func (c *Config) DockerReadiness(env func(string) (string, bool)) []string {
	if !c.PaaS.Driver.Has(DriverDocker) {
		return nil
	}
	dc := c.PaaS.Docker
	if dc == nil {
		dc = &docker.Config{}
	}
	return dc.Readiness(env)
}

// ReadinessNotes are what reaper check should still say about the apps' ready
// probes, prefixed with their field paths: a redis probe without a password
// cannot tell a loading server from a ready one when the server wants one.
func (c *Config) ReadinessNotes() []string {
	var out []string
	for i := range c.PaaS.Apps {
		for _, n := range c.PaaS.Apps[i].Ready.Notes() {
			out = append(out, conf.Key(conf.Index("paas.apps", i), "ready")+": "+n)
		}
	}
	if dc := c.PaaS.Docker; dc != nil {
		for i, a := range dc.Apps {
			if a.Ready == nil {
				continue
			}
			for _, n := range a.Ready.Notes() {
				out = append(out, conf.Key(conf.Index("paas.docker.apps", i), "ready")+": "+n)
			}
		}
	}
	return out
}

// checkTCPRoutes checks the TCP routes together and against the rest of the
// node: each port once, none where another listener of the node is, every app
// one that a driver may own. It adds their apps to managed.
func (c *Config) checkTCPRoutes(managed map[string]bool, errs *conf.Errors) {
	if len(c.TCPRoutes) == 0 {
		return
	}
	others := map[string]string{"node.listen": c.Node.Listen, "node.admin_listen": c.Node.AdminListen}
	if t := c.Node.TLS; t != nil && t.ACME != nil {
		others["node.tls.acme.http_listen"] = t.ACME.HTTPListen
	}
	if c.Cluster != nil {
		others["cluster.raft_listen"] = c.Cluster.RaftListen
	}
	own := c.staticOwners()
	known := func(id string) (bool, string) {
		if c.PaaS.Driver.Has(DriverCleverCloud) && !c.PaaS.Driver.Multi() {
			return true, ""
		}
		return own.claims(id), own.unclaimed(id)
	}
	tcproute.CheckAll(c.TCPRoutes, "tcp_routes", others, known, errs)
	httpRoutes := map[string]int{}
	for i, r := range c.Routes {
		httpRoutes[r.ID] = i
	}
	for i, r := range c.TCPRoutes {
		managed[r.AppID] = true
		if j, ok := httpRoutes[r.ID]; ok && r.ID != "" {
			errs.Add(conf.Key(conf.Index("tcp_routes", i), "id"), "%s is already the id of %s: an app lists its routes by id", strconv.Quote(r.ID), conf.Index("routes", j))
		}
	}
}

// busyURLs are the busy_urls the routes give each app, and where: an app has
// one (its routes may each repeat it, or give it on one of them only).
type busyURLs map[string]addrAt

// check reports a busy_url that differs from one an earlier route gave the
// same app. The URLs are not quoted: they may carry a token.
func (b busyURLs) check(app, url, path string, errs *conf.Errors) {
	if app == "" || url == "" {
		return
	}
	first, seen := b[app]
	if !seen {
		b[app] = addrAt{path: conf.Key(path, "busy_url"), addr: url}
		return
	}
	if first.addr != url {
		errs.Add(conf.Key(path, "busy_url"), "differs from the busy_url of app %s at %s: an app has one", strconv.Quote(app), first.path)
	}
}

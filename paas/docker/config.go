package docker

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// DefaultHost is the engine reaper talks to when neither paas.docker.host nor
// DOCKER_HOST says another.
const DefaultHost = "unix:///var/run/docker.sock"

// Stop methods: how an app is put to sleep.
const (
	// MethodStop stops the container (SIGTERM, then SIGKILL after stop_timeout):
	// its memory is given back. The default.
	MethodStop = "stop"
	// MethodPause freezes the container's processes (cgroup freezer): it wakes in
	// milliseconds, but keeps its memory. For CPU, not memory.
	MethodPause = "pause"
	// MethodKill sends SIGKILL at once: for apps that do not shut down cleanly and
	// lose nothing by it.
	MethodKill = "kill"
)

// DefaultStopTimeout is the time a stopped container has to exit before the engine
// kills it, when stop_timeout is not given.
const DefaultStopTimeout = 10 * time.Second

// Config is the driver's section, paas.docker:
//
//	host: unix:///var/run/docker.sock  # default: $DOCKER_HOST, else this
//	tls: {ca: …, cert: …, key: …}      # for a tcp:// engine
//	hosts: [{name: a, host: tcp://10.0.0.2:2376, tls: {…}}]  # several engines instead
//	labels: true                       # discover apps from container labels
//	apps: [{id: hello, container: hello-1, ready: {http: …}}]
type Config struct {
	// Host is the engine of a single-engine setup; empty: DOCKER_HOST, else
	// DefaultHost. Not with Hosts.
	Host string `yaml:"host"`
	// TLS authenticates reaper to a tcp:// Host, and the engine to reaper.
	TLS *TLSConfig `yaml:"tls"`
	// Hosts are several engines, each named; apps say which is theirs.
	Hosts []HostConfig `yaml:"hosts"`
	// Labels turns the discovery of apps from container labels (reaper.enable=true)
	// on or off; absent: on.
	Labels *bool `yaml:"labels"`
	// Apps are the containers declared in the file.
	Apps []AppConfig `yaml:"apps"`
}

// HostConfig is one engine of paas.docker.hosts[].
type HostConfig struct {
	// Name names the engine in apps[].host and in logs: letters, digits, '.', '-'
	// and '_'.
	Name string     `yaml:"name"`
	Host string     `yaml:"host"`
	TLS  *TLSConfig `yaml:"tls"`
}

// TLSConfig holds the files of a TLS connection to an engine (as for
// `docker --tlsverify`): the CA that signs the engine's certificate, and reaper's
// client certificate and key.
type TLSConfig struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// AppConfig is one container of paas.docker.apps[]. The same keys, as labels
// (reaper.stop_method, reaper.ready.http, …), describe a discovered app.
type AppConfig struct {
	// ID names the app in routes (app_id). Required, unique.
	ID string `yaml:"id"`
	// Container is the container's name or id. Required.
	Container string `yaml:"container"`
	// Host is the name of its engine in hosts[]; empty: the first.
	Host string `yaml:"host"`
	// StopMethod is stop (default), pause or kill.
	StopMethod string `yaml:"stop_method"`
	// StopTimeout is how long `stop` gives the container before SIGKILL; 0 means
	// DefaultStopTimeout.
	StopTimeout conf.Duration `yaml:"stop_timeout"`
	// Ready says when the started container takes requests. A tcp probe of a
	// port the container publishes is sent to the container's own address
	// instead (target.go). Absent: a tcp probe of the container's own address on
	// its first published port (or its only exposed one), and, when its image
	// has a HEALTHCHECK, once it is healthy; with no such port, once it runs
	// (and is healthy).
	Ready *probe.Config `yaml:"ready"`
	// DependsOn are apps started (and ready) before this one, and put to sleep
	// after it when reaper woke them for it.
	DependsOn []string `yaml:"depends_on"`
	// PricePerHour is what an hour of the app awake costs, for the savings.
	PricePerHour float64 `yaml:"price_per_hour"`
	// Currency of PricePerHour; empty means EUR.
	Currency string `yaml:"currency"`
	// BusyURL is asked before the app is put to sleep (200: busy, 204 or
	// 404: idle), when no route of it sets reaper's busy_url: a route-less
	// worker of a group. reaper's engine honours it (Driver.AppPolicy).
	BusyURL string `yaml:"busy_url"`
	// BusyMax is how long a failing BusyURL keeps the app up; 0: an hour.
	BusyMax conf.Duration `yaml:"busy_max"`
}

// Validate checks one app; the decoder calls it for each paas.docker.apps[] item.
func (c *AppConfig) Validate(path string, errs *conf.Errors) {
	switch {
	case c.ID == "":
		errs.Add(conf.Key(path, "id"), "is required")
	case !paas.ValidName(c.ID):
		errs.Add(conf.Key(path, "id"), "%s must be letters, digits, '.', '-' or '_'", strconv.Quote(c.ID))
	}
	if c.Container == "" {
		errs.Add(conf.Key(path, "container"), "is required (the container's name or id)")
	}
	c.check(path, errs)
}

// check checks what apps declared in the file and apps read from labels share.
func (c *AppConfig) check(path string, errs *conf.Errors) {
	switch c.StopMethod {
	case "", MethodStop, MethodPause, MethodKill:
	default:
		errs.Add(conf.Key(path, "stop_method"), "%s is not a stop method (use stop, pause or kill)", strconv.Quote(c.StopMethod))
	}
	if c.Ready != nil {
		c.Ready.Check(conf.Key(path, "ready"), errs)
	}
	for i, d := range c.DependsOn {
		switch {
		case !paas.ValidName(d):
			errs.Add(conf.Index(conf.Key(path, "depends_on"), i), "%s is not an app id", strconv.Quote(d))
		case d == c.ID:
			errs.Add(conf.Index(conf.Key(path, "depends_on"), i), "an app cannot depend on itself")
		}
	}
	c.checkBusy(path, errs)
	if c.PricePerHour < 0 || math.IsNaN(c.PricePerHour) || math.IsInf(c.PricePerHour, 0) {
		errs.Add(conf.Key(path, "price_per_hour"), "must be a price of zero or more, not %v", c.PricePerHour)
	}
	if c.Currency != "" && !validCurrency(c.Currency) {
		errs.Add(conf.Key(path, "currency"), "%s is not a currency code (three capital letters, e.g. EUR)", strconv.Quote(c.Currency))
	}
}

// Validate checks one engine of hosts[].
func (h *HostConfig) Validate(path string, errs *conf.Errors) {
	switch {
	case h.Name == "":
		errs.Add(conf.Key(path, "name"), "is required")
	case !paas.ValidName(h.Name):
		errs.Add(conf.Key(path, "name"), "%s must be letters, digits, '.', '-' or '_'", strconv.Quote(h.Name))
	}
	if h.Host == "" {
		errs.Add(conf.Key(path, "host"), "is required (unix:///var/run/docker.sock, tcp://host:2376, …)")
	} else {
		checkHost(h.Host, conf.Key(path, "host"), errs)
	}
}

// Validate checks the TLS files: all three are needed, and readable.
func (t *TLSConfig) Validate(path string, errs *conf.Errors) {
	for _, f := range []struct{ key, file string }{{"ca", t.CA}, {"cert", t.Cert}, {"key", t.Key}} {
		if f.file == "" {
			errs.Add(conf.Key(path, f.key), "is required with tls")
		} else if _, err := os.Stat(f.file); err != nil {
			errs.Add(conf.Key(path, f.key), "%s", conf.Unreadable(f.file, err))
		}
	}
}

// Validate checks the section as a whole: what involves several apps or engines.
// Each app and engine was checked on its own by the decoder.
func (c *Config) Validate(path string, errs *conf.Errors) {
	if len(c.Hosts) > 0 && (c.Host != "" || c.TLS != nil) {
		errs.Add(conf.Key(path, "hosts"), "give either host (and tls) or hosts, not both")
	}
	if c.Host != "" {
		checkHost(c.Host, conf.Key(path, "host"), errs)
	}
	names := map[string]int{}
	for i, h := range c.Hosts {
		if j, dup := names[h.Name]; dup && h.Name != "" {
			errs.Add(conf.Key(conf.Index(conf.Key(path, "hosts"), i), "name"), "%s is already the name of %s", strconv.Quote(h.Name), conf.Index(conf.Key(path, "hosts"), j))
		}
		names[h.Name] = i
	}
	ids := map[string]int{}
	for i, a := range c.Apps {
		ap := conf.Index(conf.Key(path, "apps"), i)
		if j, dup := ids[a.ID]; dup && a.ID != "" {
			errs.Add(conf.Key(ap, "id"), "%s is already the id of %s", strconv.Quote(a.ID), conf.Index(conf.Key(path, "apps"), j))
		}
		ids[a.ID] = i
		if _, ok := names[a.Host]; a.Host != "" && !ok {
			errs.Add(conf.Key(ap, "host"), "%s is not the name of an engine in hosts", strconv.Quote(a.Host))
		}
	}
	if cycle := dependencyCycle(c.Apps); cycle != nil {
		errs.Add(conf.Key(path, "apps"), "depends_on makes a cycle: %s", strings.Join(cycle, " → "))
	}
}

// LabelsOn reports whether apps are discovered from labels.
func (c *Config) LabelsOn() bool { return c.Labels == nil || *c.Labels }

// AppIDs are the ids of the apps declared in the file.
func (c *Config) AppIDs() []string {
	ids := make([]string, len(c.Apps))
	for i, a := range c.Apps {
		ids[i] = a.ID
	}
	return ids
}

// engines returns the engines to drive, defaults applied: hosts[], or the single
// host (DOCKER_HOST, else DefaultHost) named "local".
func (c *Config) engines(lookup func(string) (string, bool)) []HostConfig {
	if len(c.Hosts) > 0 {
		return slices.Clone(c.Hosts)
	}
	host := c.Host
	if host == "" {
		if v, ok := lookup("DOCKER_HOST"); ok && v != "" {
			host = v
		} else {
			host = DefaultHost
		}
	}
	return []HostConfig{{Name: "local", Host: host, TLS: c.TLS}}
}

// dependencyCycle returns a cycle among the declared apps' depends_on, or nil.
func dependencyCycle(apps []AppConfig) []string {
	deps := map[string][]string{}
	for _, a := range apps {
		if _, dup := deps[a.ID]; !dup { // a duplicate id is reported on its own
			deps[a.ID] = a.DependsOn
		}
	}
	const (
		visiting = 1
		done     = 2
	)
	mark := map[string]int{}
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch mark[id] {
		case visiting:
			i := slices.Index(path, id)
			return append(slices.Clone(path[i:]), id)
		case done:
			return nil
		}
		mark[id] = visiting
		path = append(path, id)
		for _, d := range deps[id] {
			if c := visit(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		mark[id] = done
		return nil
	}
	for _, a := range apps {
		if c := visit(a.ID); c != nil {
			return c
		}
	}
	return nil
}

// checkHost checks an engine address: unix://, tcp://, http(s)://, npipe:// or
// ssh:// is not supported (it needs the docker CLI).
func checkHost(h, path string, errs *conf.Errors) {
	scheme, rest, ok := strings.Cut(h, "://")
	switch {
	case !ok || rest == "":
		errs.Add(path, "%s is not an engine address (unix:///var/run/docker.sock or tcp://host:2376)", strconv.Quote(h))
	case scheme == "ssh":
		errs.Add(path, "ssh:// engines are not supported: forward the socket (ssh -L) or use tcp:// with tls")
	case scheme != "unix" && scheme != "tcp" && scheme != "http" && scheme != "https":
		errs.Add(path, "%s: the scheme must be unix or tcp", strconv.Quote(h))
	}
}

func validCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// checkBusy checks busy_url and busy_max, as a route's are checked.
func (c *AppConfig) checkBusy(path string, errs *conf.Errors) {
	if c.BusyURL != "" {
		if p := paas.CheckBusyURL(c.BusyURL); p != "" {
			errs.Add(conf.Key(path, "busy_url"), "%s", p)
		}
	}
	if c.BusyMax != 0 {
		if p := paas.CheckBusyMax(c.BusyMax.D()); p != "" {
			errs.Add(conf.Key(path, "busy_max"), "%s", p)
		}
	}
}

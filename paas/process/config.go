package process

import (
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// Defaults of an app's configuration, applied by New to the fields left empty.
const (
	DefaultStopSignal    = "SIGTERM"
	DefaultStopTimeout   = 10 * time.Second
	DefaultReadyInterval = probe.DefaultInterval // the steady one, reached 4.6 s after a start (probe.Interval)
	// MinReadyInterval keeps a typo (1ns) from turning the probe into a busy loop.
	MinReadyInterval = probe.MinInterval
)

// DefaultInheritEnv is what an app inherits from reaper's environment when its
// inherit_env is not given. reaper's own environment holds API tokens, so nothing else
// is passed on unless the operator names it.
var DefaultInheritEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR", "USER"}

// stopSignals are the signals an operator may choose to stop an app with. SIGKILL and
// SIGSTOP are left out on purpose: the first is what the stop timeout escalates to, the
// second would never stop anything.
var stopSignals = []string{"SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2"}

// AppConfig is one entry of paas.apps[]: how to run, stop and probe one app. Fields
// left empty take the defaults documented on each; New applies them.
type AppConfig struct {
	// ID names the app in routes (app_id) and in file names: letters, digits, '.',
	// '-' and '_'. Required, unique.
	ID string `yaml:"id"`
	// Command is the program and its arguments. A relative program path is
	// evaluated relative to Dir; a bare name is looked up in reaper's PATH.
	Command []string `yaml:"command"`
	// Env is added to the inherited variables (and wins over them).
	Env map[string]string `yaml:"env"`
	// InheritEnv names the variables of reaper's own environment the app receives.
	// Absent: DefaultInheritEnv. An empty list inherits nothing.
	InheritEnv []string `yaml:"inherit_env"`
	// Dir is the working directory; empty means reaper's.
	Dir string `yaml:"dir"`
	// StopSignal is sent to the app's whole process group to stop it: SIGTERM
	// (default), SIGINT, SIGQUIT, SIGHUP, SIGUSR1 or SIGUSR2, with or without "SIG".
	StopSignal string `yaml:"stop_signal"`
	// StopTimeout is how long the group has to exit after StopSignal before it is
	// sent SIGKILL. 0 means DefaultStopTimeout.
	StopTimeout conf.Duration `yaml:"stop_timeout"`
	// LogFile receives the app's stdout and stderr, appended. Empty means
	// <data_dir>/logs/<id>.log.
	LogFile string `yaml:"log_file"`
	// Ready says when a started app can take requests. Required.
	Ready ReadyConfig `yaml:"ready"`
	// PricePerHour is what an hour of the app awake costs (a VM share, a
	// licence), for the savings reaper reports; 0 counts memory only.
	PricePerHour float64 `yaml:"price_per_hour"`
	// Currency of PricePerHour; empty means EUR.
	Currency string `yaml:"currency"`
	// DependsOn are the apps started (and up) before this one, and not put to
	// sleep while it is awake. reaper's engine honours it, not this driver
	// (docs/groups-and-workers.md); the configuration's check verifies the ids.
	DependsOn []string `yaml:"depends_on"`
	// BusyURL is asked before the app is put to sleep (200: busy, 204 or
	// 404: idle), when no route of it sets reaper's busy_url: a route-less
	// worker of a group. The engine honours it (paas.PolicyHint).
	BusyURL string `yaml:"busy_url"`
	// BusyMax is how long a failing BusyURL keeps the app up; 0: an hour.
	BusyMax conf.Duration `yaml:"busy_max"`
}

// ReadyConfig is the readiness probe of an app: exactly one of tcp, http, postgres
// or redis. It is
// shared with the docker driver (package probe).
type ReadyConfig = probe.Config

// Validate checks one app on its own; the configuration decoder calls it for each
// paas.apps[] item, with path naming the item (paas.apps[1]). Checks that involve
// several apps are in ValidateApps.
func (c *AppConfig) Validate(path string, errs *conf.Errors) {
	switch {
	case c.ID == "":
		errs.Add(conf.Key(path, "id"), "is required")
	case !paas.ValidName(c.ID):
		errs.Add(conf.Key(path, "id"), "%s must be letters, digits, '.', '-' or '_' (it names files), not starting with '.'", strconv.Quote(c.ID))
	}
	switch {
	case len(c.Command) == 0:
		errs.Add(conf.Key(path, "command"), "is required (the program and its arguments, as a list)")
	case strings.TrimSpace(c.Command[0]) == "":
		errs.Add(conf.Index(conf.Key(path, "command"), 0), "the program must not be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if !conf.ValidEnvName(k) {
			errs.Add(conf.Key(conf.Key(path, "env"), k), "%s is not a valid environment variable name", strconv.Quote(k))
		}
	}
	for i, k := range c.InheritEnv {
		if !conf.ValidEnvName(k) {
			errs.Add(conf.Index(conf.Key(path, "inherit_env"), i), "%s is not a valid environment variable name", strconv.Quote(k))
		}
	}
	if c.StopSignal != "" && signalName(c.StopSignal) == "" {
		errs.Add(conf.Key(path, "stop_signal"), "%s is not a signal reaper can send (use SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1 or SIGUSR2)", strconv.Quote(c.StopSignal))
	}
	c.Ready.Check(conf.Key(path, "ready"), errs)
	c.checkBusy(path, errs)
	if c.PricePerHour < 0 || math.IsNaN(c.PricePerHour) || math.IsInf(c.PricePerHour, 0) {
		errs.Add(conf.Key(path, "price_per_hour"), "must be a price of zero or more, not %v", c.PricePerHour)
	}
	if c.Currency != "" && !validCurrency(c.Currency) {
		errs.Add(conf.Key(path, "currency"), "%s is not a currency code (three capital letters, e.g. EUR or USD)", strconv.Quote(c.Currency))
	}
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

// ValidateApps does the checks that involve several apps (unique ids); path names the
// list (paas.apps). Each app is checked on its own by AppConfig.Validate, which the
// decoder calls; ValidateApps does not repeat it.
func ValidateApps(apps []AppConfig, path string, errs *conf.Errors) {
	first := make(map[string]int, len(apps))
	for i, a := range apps {
		if a.ID == "" {
			continue
		}
		if j, dup := first[a.ID]; dup {
			errs.Add(conf.Key(conf.Index(path, i), "id"), "%s is already the id of %s", strconv.Quote(a.ID), conf.Index(path, j))
			continue
		}
		first[a.ID] = i
	}
}

// validateAll is what New checks: every app, then the list.
func validateAll(apps []AppConfig) error {
	var errs conf.Errors
	for i := range apps {
		apps[i].Validate(conf.Index("paas.apps", i), &errs)
	}
	ValidateApps(apps, "paas.apps", &errs)
	return errs.Err()
}

// spec is an app's configuration with the defaults applied, as the driver uses it.
type spec struct {
	id          string
	command     []string
	env         []string // KEY=value, inherited first, then Env
	dir         string
	stopSignal  string // canonical name, SIGTERM
	stopTimeout time.Duration
	logFile     string
	ready       probe.Config
	interval    time.Duration
	price       float64
	currency    string
	busyURL     string
	busyMax     time.Duration
}

// resolve applies the defaults; lookup reads reaper's environment.
func (c *AppConfig) resolve(dataDir string, lookup func(string) (string, bool)) spec {
	s := spec{
		id:          c.ID,
		command:     slices.Clone(c.Command),
		dir:         c.Dir,
		stopSignal:  DefaultStopSignal,
		stopTimeout: c.StopTimeout.D(),
		logFile:     c.LogFile,
		ready:       c.Ready,
		interval:    c.Ready.Interval.D(),
		price:       c.PricePerHour,
		currency:    c.Currency,
		busyURL:     c.BusyURL,
		busyMax:     c.BusyMax.D(),
	}
	if s.currency == "" {
		s.currency = "EUR"
	}
	if c.StopSignal != "" {
		s.stopSignal = signalName(c.StopSignal)
	}
	if s.stopTimeout == 0 {
		s.stopTimeout = DefaultStopTimeout
	}
	if s.logFile == "" {
		s.logFile = filepath.Join(dataDir, "logs", c.ID+".log")
	}
	if s.interval == 0 {
		s.interval = DefaultReadyInterval
	}
	inherit := c.InheritEnv
	if inherit == nil {
		inherit = DefaultInheritEnv
	}
	// Env always ends up non-nil: a nil environment would make os/exec pass on all of
	// reaper's, tokens included.
	s.env = make([]string, 0, len(inherit)+len(c.Env))
	for _, k := range inherit {
		if _, set := c.Env[k]; set {
			continue
		}
		if v, ok := lookup(k); ok {
			s.env = append(s.env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		s.env = append(s.env, k+"="+c.Env[k])
	}
	return s
}

// readyTarget is what the readiness probe reaches, for messages: a password in the
// URL is masked.
func (s *spec) readyTarget() string { return s.ready.Target() }

// signalName returns the canonical name (SIGTERM) of a stop signal written as
// SIGTERM, sigterm or TERM, or "" when it is not one reaper sends.
func signalName(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(s, "SIG") {
		s = "SIG" + s
	}
	if slices.Contains(stopSignals, s) {
		return s
	}
	return ""
}

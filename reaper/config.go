package reaper

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/page"
	"github.com/reapergw/reaper/templates"
)

// Config is the reaper plugin's configuration on one route. Its keys are those of
// the reference reaper, so an Otoroshi route export carries over; durations may be
// written as a number of seconds, as there.
type Config struct {
	// AppID is the app the route serves (required unless the driver can guess it
	// from a backend target).
	AppID string `yaml:"app_id"`
	// OwnerID is the app's owner on platforms that have owners (Clever Cloud).
	OwnerID string `yaml:"owner_id"`
	// GracePeriod is how long the app must go unused before it is put to sleep.
	GracePeriod conf.Duration `yaml:"grace_period"`
	// FailTimeout bounds a start or a stop (past it: Error) and every held request.
	FailTimeout conf.Duration `yaml:"fail_timeout"`
	// MaxFailedBoots is how many failed boots in a row (starts that exit before
	// they are ready, crashes within CrashWindow of a wake) put the app in
	// Error; each is followed by a back-off before the next start.
	MaxFailedBoots int `yaml:"max_failed_boots"`
	// AllowWaitingPage gives browsers the waiting page while the app sleeps.
	AllowWaitingPage bool `yaml:"allow_waiting_page"`
	// APIBehavior is what other callers get while the app sleeps: hold or
	// unavailable.
	APIBehavior string `yaml:"api_behavior"`
	// ReadyDelay is how long held requests wait after the app is up. Unset means the
	// driver's default (3 s on Clever Cloud, 0 for local processes whose readiness
	// is probed).
	ReadyDelay *conf.Duration `yaml:"ready_delay"`
	// MustBeUpAt lists windows during which the app is kept awake.
	MustBeUpAt []RangeConfig `yaml:"must_be_up_at"`
	// Timezone is the IANA zone of the windows.
	Timezone string `yaml:"timezone"`
	// MonitoringFilters recognise uptime monitors and health checks: while the app
	// sleeps they get a 200 without waking it, and they never count as traffic.
	MonitoringFilters []MonitoringFilter `yaml:"monitoring_filters"`
	// NotActivity are paths served without counting as a visit (notactivity.go):
	// exact, or a prefix written with a final "*".
	NotActivity []string `yaml:"not_activity"`
	// BusyURL is asked before the app is put to sleep: 200 means busy (the
	// sleep is postponed), 204 or 404 idle; a failure keeps the app up for at
	// most BusyMax (busy.go).
	BusyURL string        `yaml:"busy_url"`
	BusyMax conf.Duration `yaml:"busy_max"`
	// WaitingPage replaces the built-in waiting page: an html/template, where the
	// reference's placeholders {{route_name}}, {{app_name}}, {{app_id}},
	// {{status}}, {{request_id}} and {{node}} stand for fields of page.Fields
	// (Placeholders), and every value is escaped for where it is written.
	// reaper's script is added before its last </body>.
	WaitingPage string `yaml:"waiting_page"`
	// WaitingPageFile is the same page read from a file (read again on reload).
	WaitingPageFile string `yaml:"waiting_page_file"`
	// AllowPreview lets anyone see the waiting page at /.well-known/reaper/preview
	// on the route's hosts; without it, the preview asks for the node's admin
	// token (Authorization: Bearer).
	AllowPreview bool `yaml:"allow_preview"`
	// MaxHeld bounds the requests held for the app on this node.
	MaxHeld int `yaml:"max_held"`
	// Prewake is "learn" to start the app before the visits that recur (in
	// Timezone), "" or "off" not to.
	Prewake string `yaml:"prewake"`

	mustBeUp    []Range
	notActivity []pathMatcher
	page        *templates.Page
}

// Placeholders are those a custom waiting page may write bare, as the reference
// reaper's pages do, and the fields of page.Fields each stands for.
var Placeholders = map[string]string{
	"route_name": ".RouteName", "app_name": ".AppName", "app_id": ".AppID",
	"status": ".StatusText", "request_id": ".RequestID", "node": ".Node",
}

// pageOptions parse custom waiting pages: reaper's script goes before </body>.
var pageOptions = templates.Options{Placeholders: Placeholders, Inject: ".Script"}

// Defaults of the reference reaper, kept so that imported routes behave the same.
const (
	DefaultGracePeriod = time.Hour
	DefaultFailTimeout = 15 * time.Minute
	DefaultMaxHeld     = 1000
)

// DefaultConfig returns a Config with every default set.
func DefaultConfig() Config {
	return Config{
		GracePeriod:      conf.Duration(DefaultGracePeriod),
		FailTimeout:      conf.Duration(DefaultFailTimeout),
		MaxFailedBoots:   DefaultMaxFailedBoots,
		AllowWaitingPage: true,
		APIBehavior:      BehaviorHold,
		Timezone:         "Europe/Paris",
		MaxHeld:          DefaultMaxHeld,
		NotActivity:      append([]string(nil), DefaultNotActivity...),
		BusyMax:          conf.Duration(DefaultBusyMax),
	}
}

// API behaviours.
const (
	BehaviorHold        = "hold"
	BehaviorUnavailable = "unavailable"
)

// RangeConfig is one keep-up window as written in the configuration.
type RangeConfig struct {
	Days  []string `yaml:"days"`
	Start string   `yaml:"start"`
	End   string   `yaml:"end"`
}

// MonitoringFilter matches a request whose source value contains a match of Regex
// (find semantics, as the reference has them).
type MonitoringFilter struct {
	Source string `yaml:"source"` // path, uri, header, user_agent, query
	Name   string `yaml:"name"`   // the header or query parameter, for those sources
	Regex  string `yaml:"regex"`

	re *regexp.Regexp
}

// Monitoring filter sources.
var filterSources = []string{"path", "uri", "header", "user_agent", "query"}

// Validate checks the config; a bad regex is an error here, never a silent
// non-match at request time.
func (c *Config) Validate(path string, errs *conf.Errors) {
	if c.GracePeriod <= 0 {
		errs.Add(conf.Key(path, "grace_period"), "must be more than 0")
	}
	if c.FailTimeout <= 0 {
		errs.Add(conf.Key(path, "fail_timeout"), "must be more than 0")
	}
	if c.MaxFailedBoots < 1 || c.MaxFailedBoots > MaxFailedBootsLimit {
		errs.Add(conf.Key(path, "max_failed_boots"), "%d is not from 1 to %d", c.MaxFailedBoots, MaxFailedBootsLimit)
	}
	switch c.APIBehavior {
	case BehaviorHold, BehaviorUnavailable:
	case "client_poll":
		// Retired in the reference, which falls back to hold: so does reaper
		// (import-otoroshi says so when it converts a route).
		c.APIBehavior = BehaviorHold
	default:
		errs.Add(conf.Key(path, "api_behavior"), "%s is not a behaviour (use hold or unavailable)", strconv.Quote(c.APIBehavior))
	}
	if c.MaxHeld < 1 {
		errs.Add(conf.Key(path, "max_held"), "must be at least 1")
	}
	if c.Prewake != "" && c.Prewake != "off" && c.Prewake != PrewakeLearn {
		errs.Add(conf.Key(path, "prewake"), "%s is not a pre-wake mode (use learn, or off)", strconv.Quote(c.Prewake))
	}
	tz := c.Timezone
	if _, err := time.LoadLocation(c.Timezone); err != nil {
		errs.Add(conf.Key(path, "timezone"), "%s is not a known time zone (use an IANA name such as Europe/Paris)", strconv.Quote(c.Timezone))
		tz = "" // the windows are still checked, in the default zone
	}
	c.mustBeUp = c.mustBeUp[:0]
	for i, rc := range c.MustBeUpAt {
		at := conf.Index(conf.Key(path, "must_be_up_at"), i)
		r, rerrs := ParseRangeAll(rc.Days, rc.Start, rc.End, tz)
		for _, e := range rerrs {
			field := conf.Key(at, e.Field)
			if e.Field == "days" {
				field = conf.Index(field, e.Index)
			}
			errs.Add(field, "%s", e.Error())
		}
		if len(rerrs) == 0 {
			c.mustBeUp = append(c.mustBeUp, r)
		}
	}
	switch {
	case c.WaitingPage != "" && c.WaitingPageFile != "":
		errs.Add(conf.Key(path, "waiting_page_file"), "give waiting_page or waiting_page_file, not both")
	case c.WaitingPage != "":
		p, err := templates.Parse(c.WaitingPage, pageOptions)
		c.page = checkPage(p, err, conf.Key(path, "waiting_page"), errs)
	case c.WaitingPageFile != "":
		p, err := templates.LoadFile(c.WaitingPageFile, pageOptions)
		c.page = checkPage(p, err, conf.Key(path, "waiting_page_file"), errs)
	}
	for i := range c.MonitoringFilters {
		c.MonitoringFilters[i].validate(conf.Index(conf.Key(path, "monitoring_filters"), i), errs)
	}
	c.checkNotActivity(path, errs)
	c.checkBusy(path, errs)
}

// checkPage checks a parsed custom waiting page (p, or the error of its parse):
// a page that fails to render with every field set (a field it names that does
// not exist, a value written where html/template cannot escape it) is an error
// at load time rather than at a visitor's request. It returns the page, nil
// when it is not good.
func checkPage(p *templates.Page, err error, path string, errs *conf.Errors) *templates.Page {
	if err == nil {
		var f page.Fields
		if f, err = page.NewFields(context.Background(), samplePage, ""); err == nil {
			_, err = p.Execute(f)
		}
	}
	if err != nil {
		errs.Add(path, "%s", err.Error())
		return nil
	}
	return p
}

// samplePage is a waiting page with every field set, to try custom pages on.
var samplePage = page.Waiting{RouteName: "route", AppName: "app", AppID: "app_id", Status: string(StatusWaitingForUp),
	RequestID: "request", Node: "node", EventsURL: WellKnownEventsPath,
	Progress: page.Progress{Asked: true, Waited: time.Second, Accepted: time.Second, ETA: time.Second, Samples: 1}}

func (f *MonitoringFilter) validate(path string, errs *conf.Errors) {
	known := false
	for _, s := range filterSources {
		known = known || f.Source == s
	}
	if !known {
		errs.Add(conf.Key(path, "source"), "%s is not a source (use %s)", strconv.Quote(f.Source), strings.Join(filterSources, ", "))
	}
	if (f.Source == "header" || f.Source == "query") && f.Name == "" {
		errs.Add(conf.Key(path, "name"), "is required with source %s", f.Source)
	}
	if f.Regex == "" {
		errs.Add(conf.Key(path, "regex"), "is required")
		return
	}
	re, err := regexp.Compile(f.Regex)
	if err != nil {
		errs.Add(conf.Key(path, "regex"), "%s is not a valid regular expression: %s", strconv.Quote(f.Regex), regexpReason(err))
		return
	}
	f.re = re
}

// isMonitoring reports whether a monitoring filter of the route matches r.
func (c *Config) isMonitoring(r *http.Request) bool {
	for i := range c.MonitoringFilters {
		if c.MonitoringFilters[i].matches(r) {
			return true
		}
	}
	return false
}

// matches reports whether the filter's source value in r contains a match of its
// regex. A filter that did not validate matches nothing.
func (f *MonitoringFilter) matches(r *http.Request) bool {
	if f.re == nil {
		return false
	}
	switch f.Source {
	case "path":
		return f.re.MatchString(r.URL.Path)
	case "uri":
		return f.re.MatchString(r.URL.RequestURI())
	case "header":
		for _, v := range r.Header.Values(f.Name) {
			if f.re.MatchString(v) {
				return true
			}
		}
	case "user_agent":
		return f.re.MatchString(r.UserAgent())
	case "query":
		for _, v := range r.URL.Query()[f.Name] {
			if f.re.MatchString(v) {
				return true
			}
		}
	}
	return false
}

// regexpReason keeps the part of a regexp error that says what is wrong.
func regexpReason(err error) string {
	var e *syntax.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s `%s`", e.Code, e.Expr)
	}
	return err.Error()
}

// policy returns the decision policy of this route alone.
func (c *Config) policy() Policy {
	p := Policy{
		GracePeriod: c.GracePeriod.D(),
		FailTimeout: c.FailTimeout.D(),
		MustBeUp:    c.mustBeUp,
		// The config says it; Decide's default is for policies built by hand.
		MaxFailedBoots: c.MaxFailedBoots,
		Prewake:        c.Prewake == PrewakeLearn,
		BusyURL:        c.BusyURL,
		BusyMax:        c.BusyMax.D(),
	}
	if loc, err := time.LoadLocation(c.Timezone); err == nil && p.Prewake {
		p.Location = loc
	}
	return p
}

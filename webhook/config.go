package webhook

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// Config is one webhook of events.webhooks[]: where to send which events, how.
type Config struct {
	// Name names the webhook in logs, metrics and the store (its queue): letters,
	// digits, '.', '_' and '-'. Default: the host of URL.
	Name string `yaml:"name"`
	// URL receives the events (POST). A Secret: the URL of a Slack incoming
	// webhook is itself a credential, so it never shows in logs or errors.
	URL conf.Secret `yaml:"url"`
	// Events are the types sent (Types); empty: every type.
	Events []string `yaml:"events"`
	// Apps are the app ids whose events are sent; empty: every app.
	Apps []string `yaml:"apps"`
	// Secret signs each body (the Reaper-Signature header); empty: unsigned.
	Secret conf.Secret `yaml:"secret"`
	// Timeout bounds one delivery attempt; 0: DefaultTimeout.
	Timeout conf.Duration `yaml:"timeout"`
	// Format is FormatJSON (default) or FormatSlack.
	Format string `yaml:"format"`
	// MaxAge is how long an event is retried before it is dropped; 0:
	// DefaultMaxAge.
	MaxAge conf.Duration `yaml:"max_age"`
	// QueueLimit bounds the events kept for the webhook; past it, the oldest
	// are dropped. 0: DefaultQueueLimit.
	QueueLimit int `yaml:"queue_limit"`
}

// Formats of a body.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// Defaults and bounds of Config.
const (
	DefaultTimeout    = 5 * time.Second
	MaxTimeout        = time.Minute
	DefaultMaxAge     = 24 * time.Hour
	MinMaxAge         = time.Minute
	MaxMaxAge         = 30 * 24 * time.Hour
	DefaultQueueLimit = 10_000
	MaxQueueLimit     = 100_000
	minSecret         = 16
)

// The types of events.
const (
	TypeStatus      = "status"       // any change of status (error included)
	TypeError       = "error"        // a change of status to Error
	TypeHold        = "hold"         // an operator held the app awake
	TypeRelease     = "release"      // an operator ended a hold
	TypeHoldExpired = "hold_expired" // a hold ran out by itself
	TypeSleep       = "sleep"        // an operator put the app to sleep
	TypeWakeAsk     = "wake_ask"     // an operator asked the app to wake
	TypeWake        = "wake"         // the first held request was answered after a wake
	TypeSlowWake    = "slow_wake"    // a wake took longer than events.alert_wake_after
)

// Types lists every type of event, in the order the documentation gives them.
var Types = []string{TypeStatus, TypeError, TypeHold, TypeRelease, TypeHoldExpired, TypeSleep, TypeWakeAsk, TypeWake, TypeSlowWake}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate checks the webhook on its own; Check checks the list.
func (c *Config) Validate(path string, errs *conf.Errors) {
	c.validateURL(conf.Key(path, "url"), errs)
	if c.Name != "" && !nameRE.MatchString(c.Name) {
		errs.Add(conf.Key(path, "name"), "%s: use 1 to 64 letters, digits, '.', '_' or '-'", strconv.Quote(c.Name))
	}
	checkList(c.Events, conf.Key(path, "events"), errs, func(e string) string {
		if !slices.Contains(Types, e) {
			return strconv.Quote(e) + " is not a type of event (use " + strings.Join(Types, ", ") + ")"
		}
		return ""
	})
	checkList(c.Apps, conf.Key(path, "apps"), errs, func(a string) string {
		if strings.TrimSpace(a) == "" {
			return "an app id cannot be empty"
		}
		return ""
	})
	if s := c.Secret.Reveal(); s != "" && len(s) < minSecret {
		errs.Add(conf.Key(path, "secret"), "must be at least %d characters (a random string: openssl rand -hex 32)", minSecret)
	}
	if c.Timeout.D() > MaxTimeout {
		errs.Add(conf.Key(path, "timeout"), "must be at most %v, not %v", MaxTimeout, c.Timeout.D())
	}
	if d := c.MaxAge.D(); d != 0 && (d < MinMaxAge || d > MaxMaxAge) {
		errs.Add(conf.Key(path, "max_age"), "must be from %v to %v (30 days), not %v", MinMaxAge, MaxMaxAge, d)
	}
	switch c.Format {
	case "", FormatJSON, FormatSlack:
	default:
		errs.Add(conf.Key(path, "format"), "%s is not a format (use json or slack)", strconv.Quote(c.Format))
	}
	if c.QueueLimit < 0 || c.QueueLimit > MaxQueueLimit {
		errs.Add(conf.Key(path, "queue_limit"), "must be from 1 to %d (0: %d), not %d", MaxQueueLimit, DefaultQueueLimit, c.QueueLimit)
	}
}

// validateURL checks url without ever quoting it: its path or query may hold a
// token.
func (c *Config) validateURL(path string, errs *conf.Errors) {
	raw := c.URL.Reveal()
	if raw == "" {
		errs.Add(path, "is required: where to POST the events")
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		errs.Add(path, "is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		errs.Add(path, "must be an http:// or https:// URL")
	case u.Host == "" || u.Hostname() == "":
		errs.Add(path, "has no host")
	case u.Fragment != "":
		errs.Add(path, "must have no #fragment")
	}
}

// checkList reports every bad or repeated item of a list of strings.
func checkList(list []string, path string, errs *conf.Errors, bad func(string) string) {
	seen := map[string]bool{}
	for i, s := range list {
		switch msg := bad(s); {
		case msg != "":
			errs.Add(conf.Index(path, i), "%s", msg)
		case seen[s]:
			errs.Add(conf.Index(path, i), "%s is listed twice", strconv.Quote(s))
		}
		seen[s] = true
	}
}

// Check checks a list of webhooks together, at path (events.webhooks):
// every name (given or defaulted) is unique, and slow_wake is only asked for
// with an alert_wake_after. Each webhook was validated on its own already.
func Check(hooks []Config, alertWakeAfter time.Duration, path string, errs *conf.Errors) {
	names := map[string]int{}
	for i := range hooks {
		c := &hooks[i]
		p := conf.Index(path, i)
		name := c.ResolvedName()
		if j, dup := names[name]; dup && name != "" {
			key := "name"
			if c.Name == "" {
				key = "url"
			}
			errs.Add(conf.Key(p, key), "the name %s is %s's already (a webhook's default name is its URL's host): give each a name",
				strconv.Quote(name), conf.Index(path, j))
		}
		names[name] = i
		if alertWakeAfter == 0 && slices.Contains(c.Events, TypeSlowWake) {
			errs.Add(conf.Key(p, "events"), "slow_wake needs events.alert_wake_after (how long a wake may take before it is slow)")
		}
	}
}

// ResolvedName is the webhook's name: Name, or else the host of its URL ("" if
// the URL cannot be read).
func (c *Config) ResolvedName() string {
	if c.Name != "" {
		return c.Name
	}
	u, err := url.Parse(c.URL.Reveal())
	if err != nil {
		return ""
	}
	return u.Hostname()
}

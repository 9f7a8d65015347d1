package clevercloud

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// The two API hosts: API tokens work on the bridge only, OAuth 1 on the API host.
const (
	BridgeURL = "https://api-bridge.clever-cloud.com"
	APIURL    = "https://api.clever-cloud.com"
)

// DefaultTimeout bounds one HTTP call when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxTimeout is the longest per-call timeout accepted: the job waits on calls.
const maxTimeout = 5 * time.Minute

// DefaultRateLimitMax is the longest back-off after a rate limit without
// Retry-After, when Config.RateLimitMaxBackoff is not set. It is short on purpose.
// Once the API recovers, a pending start goes out within one back-off step, and
// every second of that step comes out of the fail timeout of the requests held for
// the wake, which must also cover the app's boot; a storm of n refusals in a row
// costs a wake about n steps. A longer step would spare the API little: while the
// gate is closed the whole driver sends one call per step, however many apps wait,
// and 5 s is the job's fast tick, so a storm costs the API about as many calls as a
// calm pass does.
const DefaultRateLimitMax = 5 * time.Second

// The bounds of Config.RateLimitMaxBackoff: no shorter than the first back-off
// step, no longer than the former fixed cap (2 min), which outlasted the 90 s
// fail timeout of held requests.
const (
	minRateLimitMax = time.Second
	maxRateLimitMax = 2 * time.Minute
)

// Config is the driver's configuration, the YAML under paas.clevercloud:
//
//	api_url: https://api-bridge.clever-cloud.com  # default: the host of the credential
//	token: ${CLEVER_CLOUD_API_TOKEN}             # an API token, or:
//	oauth: {consumer_key: …, consumer_secret: …, token: …, secret: …}
//	owner_id: orga_…                             # owner of apps whose route does not say
//	timeout: 30s                                 # per HTTP call
//	rate_limit_max_backoff: 5s                   # longest wait after a rate limit
//
// Exactly one of Token and OAuth is set.
type Config struct {
	APIURL  string        `yaml:"api_url"`
	Token   conf.Secret   `yaml:"token"`
	OAuth   *OAuth        `yaml:"oauth"`
	OwnerID string        `yaml:"owner_id"`
	Timeout conf.Duration `yaml:"timeout"`
	// RateLimitMaxBackoff caps the back-off after a rate limit without
	// Retry-After (DefaultRateLimitMax when zero).
	RateLimitMaxBackoff conf.Duration `yaml:"rate_limit_max_backoff"`
}

// OAuth are OAuth 1 credentials: a consumer (an OAuth application) and a token of a
// user for it. They are sent with a PLAINTEXT signature, on the API host.
type OAuth struct {
	ConsumerKey    conf.Secret `yaml:"consumer_key"`
	ConsumerSecret conf.Secret `yaml:"consumer_secret"`
	Token          conf.Secret `yaml:"token"`
	Secret         conf.Secret `yaml:"secret"`
}

// Validate checks each OAuth field; the decoder calls it with the path of the
// oauth mapping.
func (o *OAuth) Validate(path string, errs *conf.Errors) {
	for _, f := range []struct {
		key string
		v   conf.Secret
	}{{"consumer_key", o.ConsumerKey}, {"consumer_secret", o.ConsumerSecret}, {"token", o.Token}, {"secret", o.Secret}} {
		if !f.v.IsSet() {
			errs.Add(conf.Key(path, f.key), "is required when oauth is used")
			continue
		}
		checkCredential(conf.Key(path, f.key), f.v, errs)
	}
}

// Validate checks the configuration; the decoder calls it with the path of the
// mapping (paas.clevercloud). Messages name the credential, never its value.
func (c *Config) Validate(path string, errs *conf.Errors) {
	switch {
	case !c.Token.IsSet() && c.OAuth == nil:
		errs.Add(path, "a credential is required: set token (an API token) or oauth (OAuth 1 keys)")
	case c.Token.IsSet() && c.OAuth != nil:
		errs.Add(path, "set token or oauth, not both")
	case c.Token.IsSet():
		checkCredential(conf.Key(path, "token"), c.Token, errs)
	}
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
			errs.Add(conf.Key(path, "api_url"), "%s is not an http(s) URL", strconv.Quote(c.APIURL))
		case u.RawQuery != "" || u.Fragment != "":
			errs.Add(conf.Key(path, "api_url"), "must not have a query or a fragment")
		case c.Token.IsSet() && c.OAuth == nil && strings.EqualFold(u.Host, "api.clever-cloud.com"):
			errs.Add(conf.Key(path, "api_url"), "an API token works on the bridge host only: use %s (or drop api_url)", BridgeURL)
		case c.OAuth != nil && !c.Token.IsSet() && strings.EqualFold(u.Host, "api-bridge.clever-cloud.com"):
			errs.Add(conf.Key(path, "api_url"), "OAuth credentials work on the API host only: use %s (or drop api_url)", APIURL)
		}
	}
	if c.OwnerID != "" && !validOwner(c.OwnerID) {
		errs.Add(conf.Key(path, "owner_id"), "%s is not an owner id (orga_… or user_…)", strconv.Quote(c.OwnerID))
	}
	if c.Timeout.D() > maxTimeout {
		errs.Add(conf.Key(path, "timeout"), "must be at most %s", maxTimeout)
	}
	switch d := c.RateLimitMaxBackoff.D(); {
	case d != 0 && d < minRateLimitMax:
		errs.Add(conf.Key(path, "rate_limit_max_backoff"), "must be at least %s (the first back-off step)", minRateLimitMax)
	case d > maxRateLimitMax:
		errs.Add(conf.Key(path, "rate_limit_max_backoff"),
			"must be at most %s: a pending wake waits up to this long after the API recovers", maxRateLimitMax)
	}
}

// checkCredential refuses values that cannot be right: spaces or control
// characters (a stray newline from a file or a variable), or a scheme pasted in
// front of a token.
func checkCredential(path string, v conf.Secret, errs *conf.Errors) {
	s := v.Reveal()
	if strings.HasPrefix(strings.ToLower(s), "bearer ") {
		errs.Add(path, "is malformed: give the token alone, without \"Bearer \"")
		return
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			errs.Add(path, "is malformed: it holds spaces or control characters (check the variable it comes from)")
			return
		}
	}
}

// validOwner reports whether s looks like an owner id.
func validOwner(s string) bool {
	for _, p := range []string{"orga_", "user_"} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest != "" && !strings.ContainsAny(rest, "/?#% ")
		}
	}
	return false
}

// check runs the validators as the decoder would, for a Config built in code.
func (c Config) check() error {
	var errs conf.Errors
	if c.OAuth != nil {
		c.OAuth.Validate("paas.clevercloud.oauth", &errs)
	}
	c.Validate("paas.clevercloud", &errs)
	return errs.Err()
}

// baseURL is the API URL to use: api_url, else the host of the credential.
func (c Config) baseURL() string {
	if c.APIURL != "" {
		return strings.TrimRight(c.APIURL, "/")
	}
	if c.OAuth != nil {
		return APIURL
	}
	return BridgeURL
}

// credentialKind names the credential in messages.
func (c Config) credentialKind() string {
	if c.OAuth != nil {
		return "the OAuth credentials were"
	}
	return "the API token was"
}

func (c Config) timeout() time.Duration {
	if c.Timeout.D() > 0 {
		return c.Timeout.D()
	}
	return DefaultTimeout
}

func (c Config) rateLimitMax() time.Duration {
	if c.RateLimitMaxBackoff.D() > 0 {
		return c.RateLimitMaxBackoff.D()
	}
	return DefaultRateLimitMax
}

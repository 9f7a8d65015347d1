package clevercloud

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// decodeConfig decodes src as the lead's loader does: the mapping under
// paas.clevercloud, with env for ${VAR}.
func decodeConfig(t *testing.T, src string, env map[string]string) (Config, error) {
	t.Helper()
	n, err := conf.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var cfg Config
	var errs conf.Errors
	d := conf.Decoder{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	d.Decode(n, &cfg, "paas.clevercloud", &errs)
	return cfg, errs.Err()
}

func TestConfig_ErrorsWordForWord(t *testing.T) {
	env := map[string]string{
		"CLEVER_CLOUD_API_TOKEN": "tok-SECRET-8c1f2e",
		"NEWLINE_TOKEN":          "tok-SECRET-8c1f2e\n",
		"CC_CONSUMER_KEY":        "ck-SECRET-1a2b",
		"CC_CONSUMER_SECRET":     "cs-SECRET-3c4d",
	}
	cases := []struct{ name, src, want string }{
		{"no credential", "owner_id: orga_x",
			"paas.clevercloud: a credential is required: set token (an API token) or oauth (OAuth 1 keys)"},
		{"both", "token: ${CLEVER_CLOUD_API_TOKEN}\noauth: {consumer_key: a, consumer_secret: b, token: c, secret: d}",
			"paas.clevercloud: set token or oauth, not both"},
		{"oauth incomplete", "oauth: {consumer_key: \"${CC_CONSUMER_KEY}\", consumer_secret: \"${CC_CONSUMER_SECRET}\"}",
			"paas.clevercloud.oauth.token: is required when oauth is used\n" +
				"paas.clevercloud.oauth.secret: is required when oauth is used"},
		{"oauth empty", "oauth: {}",
			"paas.clevercloud.oauth.consumer_key: is required when oauth is used\n" +
				"paas.clevercloud.oauth.consumer_secret: is required when oauth is used\n" +
				"paas.clevercloud.oauth.token: is required when oauth is used\n" +
				"paas.clevercloud.oauth.secret: is required when oauth is used"},
		{"oauth malformed", "oauth: {consumer_key: \"${CC_CONSUMER_KEY}\", consumer_secret: \"cs-SECRET 3c4d\", token: c, secret: d}",
			"paas.clevercloud.oauth.consumer_secret: is malformed: it holds spaces or control characters (check the variable it comes from)"},
		{"token with a newline", "token: ${NEWLINE_TOKEN}",
			"paas.clevercloud.token: is malformed: it holds spaces or control characters (check the variable it comes from)"},
		{"token with its scheme", "token: \"Bearer tok-SECRET-8c1f2e\"",
			"paas.clevercloud.token: is malformed: give the token alone, without \"Bearer \""},
		{"token unset", "token: ${CLEVER_TOKEN_NOT_SET}",
			"paas.clevercloud.token: environment variable CLEVER_TOKEN_NOT_SET is not set\n" +
				"paas.clevercloud: a credential is required: set token (an API token) or oauth (OAuth 1 keys)"},
		{"bad url", "token: t0ken\napi_url: ftp://example.com",
			`paas.clevercloud.api_url: "ftp://example.com" is not an http(s) URL`},
		{"url with query", "token: t0ken\napi_url: https://example.com/?a=1",
			"paas.clevercloud.api_url: must not have a query or a fragment"},
		{"token on the API host", "token: t0ken\napi_url: https://api.clever-cloud.com",
			"paas.clevercloud.api_url: an API token works on the bridge host only: use https://api-bridge.clever-cloud.com (or drop api_url)"},
		{"oauth on the bridge host", "oauth: {consumer_key: a, consumer_secret: b, token: c, secret: d}\napi_url: https://api-bridge.clever-cloud.com/",
			"paas.clevercloud.api_url: OAuth credentials work on the API host only: use https://api.clever-cloud.com (or drop api_url)"},
		{"owner", "token: t0ken\nowner_id: acme",
			`paas.clevercloud.owner_id: "acme" is not an owner id (orga_… or user_…)`},
		{"timeout", "token: t0ken\ntimeout: 10m",
			"paas.clevercloud.timeout: must be at most 5m0s"},
		{"back-off too short", "token: t0ken\nrate_limit_max_backoff: 500ms",
			"paas.clevercloud.rate_limit_max_backoff: must be at least 1s (the first back-off step)"},
		{"back-off too long", "token: t0ken\nrate_limit_max_backoff: 5m",
			"paas.clevercloud.rate_limit_max_backoff: must be at most 2m0s: a pending wake waits up to this long after the API recovers"},
		{"typo", "tokn: t0ken",
			"paas.clevercloud.tokn: unknown key (did you mean \"token\"?)\n" +
				"paas.clevercloud: a credential is required: set token (an API token) or oauth (OAuth 1 keys)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeConfig(t, tc.src, env)
			var list conf.List
			if !errors.As(err, &list) {
				t.Fatalf("error %v, want a conf.List", err)
			}
			if err.Error() != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", err, tc.want)
			}
			for _, s := range secretValues() {
				if strings.Contains(err.Error(), s) || strings.Contains(err.Error(), "cs-SECRET 3c4d") {
					t.Errorf("error shows a secret: %s", err)
				}
			}
		})
	}
}

func TestConfig_ValidAndDefaults(t *testing.T) {
	env := map[string]string{"CLEVER_CLOUD_API_TOKEN": "tok", "CC_CONSUMER_KEY": "k", "CC_CONSUMER_SECRET": "s",
		"CC_OAUTH_TOKEN": "t", "CC_OAUTH_SECRET": "x"}
	cfg, err := decodeConfig(t, "token: ${CLEVER_CLOUD_API_TOKEN}\nowner_id: user_1\n", env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.baseURL() != BridgeURL || cfg.timeout() != DefaultTimeout || cfg.OwnerID != "user_1" || cfg.Token.Reveal() != "tok" ||
		cfg.rateLimitMax() != DefaultRateLimitMax {
		t.Errorf("token config: %+v → %s %s %s", cfg, cfg.baseURL(), cfg.timeout(), cfg.rateLimitMax())
	}
	cfg, err = decodeConfig(t, `
oauth:
  consumer_key: ${CC_CONSUMER_KEY}
  consumer_secret: ${CC_CONSUMER_SECRET}
  token: ${CC_OAUTH_TOKEN}
  secret: ${CC_OAUTH_SECRET}
timeout: 12
rate_limit_max_backoff: 20s
`, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.baseURL() != APIURL || cfg.timeout() != 12*time.Second || cfg.OAuth.Secret.Reveal() != "x" ||
		cfg.rateLimitMax() != 20*time.Second {
		t.Errorf("oauth config: %+v", cfg)
	}
	cfg, err = decodeConfig(t, "token: tok\napi_url: http://127.0.0.1:7801/\n", env)
	if err != nil || cfg.baseURL() != "http://127.0.0.1:7801" {
		t.Errorf("api_url: %v %s", err, cfg.baseURL())
	}
}

func TestNew_ValidatesAConfigBuiltInCode(t *testing.T) {
	_, err := New(Config{OAuth: &OAuth{ConsumerKey: "k"}}, Options{})
	want := "paas.clevercloud.oauth.consumer_secret: is required when oauth is used\n" +
		"paas.clevercloud.oauth.token: is required when oauth is used\n" +
		"paas.clevercloud.oauth.secret: is required when oauth is used"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	if _, err := New(Config{Token: "t0ken"}, Options{}); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
}

func TestNew_RateLimitMaxBackoffCapsTheGate(t *testing.T) {
	for _, c := range []struct {
		set, opt, want time.Duration
	}{
		{0, 0, DefaultRateLimitMax},
		{20 * time.Second, 0, 20 * time.Second},
		{20 * time.Second, time.Second, time.Second}, // Options win: tests shorten the waits
	} {
		d, err := New(Config{Token: "t0ken", RateLimitMaxBackoff: conf.Duration(c.set)}, Options{RateLimitMax: c.opt})
		if err != nil {
			t.Fatal(err)
		}
		if d.gate.max != c.want {
			t.Errorf("rate_limit_max_backoff %v, option %v: the gate caps at %v, want %v", c.set, c.opt, d.gate.max, c.want)
		}
	}
}

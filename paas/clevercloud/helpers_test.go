package clevercloud

import (
	"github.com/reapergw/reaper/internal/logtest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Recognisable credentials, so a test can grep for them in logs and errors.
const (
	testToken = "tok-SECRET-8c1f2e"
	orga      = "orga_aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	user      = "user_99999999-8888-4777-8666-555555555555"
)

var testOAuth = fakeclever.OAuthCreds{
	ConsumerKey: "ck-SECRET-1a2b", ConsumerSecret: "cs-SECRET-&/=+3c4d",
	Token: "ot-SECRET-5e6f", Secret: "os-SECRET-%7g8h",
}

func secretValues() []string {
	return []string{testToken, testOAuth.ConsumerKey, testOAuth.ConsumerSecret, testOAuth.Token, testOAuth.Secret,
		percentEncode(testOAuth.ConsumerSecret), percentEncode(testOAuth.Secret)}
}

// env is a driver talking to a fake over loopback.
type env struct {
	f    *fakeclever.Fake
	c    *Client
	logs *logtest.Buffer
}

// fastOptions keep the retry and rate-limit waits short for tests.
func fastOptions(logs *logtest.Buffer) Options {
	return Options{
		Logger:        slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Version:       "test",
		RetryBase:     5 * time.Millisecond,
		RetryMax:      20 * time.Millisecond,
		RateLimitBase: 20 * time.Millisecond,
		RateLimitMax:  100 * time.Millisecond,
		GateWait:      2 * time.Second,
	}
}

// newEnv starts a fake and a driver on its bridge host with the test token; mod
// may change the driver's configuration and options before it is built.
func newEnv(t *testing.T, fo fakeclever.Options, mod func(f *fakeclever.Fake, c *Config, o *Options)) *env {
	t.Helper()
	fo.Token = testToken
	creds := testOAuth
	fo.OAuth = &creds
	f := fakeclever.New(fo)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	logs := &logtest.Buffer{}
	cfg := Config{APIURL: f.BridgeURL(), Token: conf.Secret(testToken)}
	opts := fastOptions(logs)
	if mod != nil {
		mod(f, &cfg, &opts)
	}
	c, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{f: f, c: c, logs: logs}
}

// oauthConfig points the driver at the API host with the test OAuth credentials.
func oauthConfig(f *fakeclever.Fake, c *Config) {
	c.Token = ""
	c.APIURL = f.APIURL()
	c.OAuth = &OAuth{ConsumerKey: conf.Secret(testOAuth.ConsumerKey), ConsumerSecret: conf.Secret(testOAuth.ConsumerSecret),
		Token: conf.Secret(testOAuth.Token), Secret: conf.Secret(testOAuth.Secret)}
}

// calls returns the fake's API calls whose path contains part, as "METHOD path?query".
func (e *env) calls(part string) []string {
	var out []string
	for _, c := range e.f.Calls() {
		if strings.Contains(c.Path, part) {
			s := c.Method + " " + c.Path
			if c.Query != "" {
				s += "?" + c.Query
			}
			out = append(out, s)
		}
	}
	return out
}

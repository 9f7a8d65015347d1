package clevercloud

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestOAuthHeader_PlaintextSignature(t *testing.T) {
	o := &OAuth{ConsumerKey: "key", ConsumerSecret: "c&s", Token: "tok en", Secret: "t%s"}
	got := oauthHeader(o, time.Unix(1700000000, 0), "abc")
	// signature = pe("c&s") & pe("t%s") = c%26s&t%25s, then percent-encoded again
	// as a header parameter: the & becomes %26 and each % becomes %25.
	want := `OAuth oauth_consumer_key="key", oauth_token="tok%20en", oauth_signature_method="PLAINTEXT", ` +
		`oauth_signature="c%2526s%26t%2525s", oauth_timestamp="1700000000", oauth_nonce="abc", oauth_version="1.0"`
	if got != want {
		t.Errorf("header\n%s\nwant\n%s", got, want)
	}
}

func TestOAuth_AcceptedOnTheAPIHostAndEachRequestSignedAfresh(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, oauthConfigMod)
	a := e.f.AddApp(fakeclever.App{Owner: orga})
	for range 2 {
		if _, err := e.c.Observe(context.Background(), paas.App{ID: a.ID, Owner: orga}); err != nil {
			t.Fatal(err)
		}
	}
	if calls := e.f.Calls(); len(calls) != 2 || calls[0].Host != "api" || calls[1].Status != 200 {
		t.Errorf("calls %+v", calls)
	}
	if h1, h2 := e.c.authorization(), e.c.authorization(); h1 == h2 {
		t.Error("two requests share a nonce")
	}
	// A wrong consumer secret is refused, and the error names the credential kind.
	e2 := newEnv(t, fakeclever.Options{}, func(f *fakeclever.Fake, c *Config, _ *Options) {
		oauthConfig(f, c)
		c.OAuth.ConsumerSecret = "cs-SECRET-wrong"
	})
	e2.f.AddApp(fakeclever.App{ID: a.ID, Owner: orga})
	_, err := e2.c.Observe(context.Background(), paas.App{ID: a.ID, Owner: orga})
	if !errors.Is(err, paas.ErrAuth) {
		t.Errorf("wrong signature: %v", err)
	}
}

func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{"abc-._~XYZ09": "abc-._~XYZ09", "a b&c=d/é+": "a%20b%26c%3Dd%2F%C3%A9%2B", "%": "%25"} {
		if got := percentEncode(in); got != want {
			t.Errorf("percentEncode(%q) = %q, want %q", in, got, want)
		}
	}
}

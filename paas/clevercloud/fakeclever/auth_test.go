package fakeclever

import (
	"strings"
	"testing"
)

func TestAuth_EachHostTakesItsOwnCredential(t *testing.T) {
	creds := OAuthCreds{ConsumerKey: "ck", ConsumerSecret: "c&s=cret/+", Token: "tok", Secret: "t s%cret"}
	f := startFake(t, Options{Token: "the-token", OAuth: &creds})
	wrongSig := creds
	wrongSig.Secret = "other"
	cases := []struct {
		name, url, auth string
		want            int
		msg             string // part of the 401 message
	}{
		{"bearer on bridge", f.BridgeURL(), "Bearer the-token", 200, ""},
		{"bearer scheme any case", f.BridgeURL(), "bearer the-token", 200, ""},
		{"wrong token", f.BridgeURL(), "Bearer nope", 401, "invalid or expired token"},
		{"no credential on bridge", f.BridgeURL(), "", 401, "no Authorization header"},
		{"oauth on bridge", f.BridgeURL(), oauthHeader(creds), 401, "API tokens (Bearer) only"},
		{"oauth plaintext on api", f.APIURL(), oauthHeader(creds), 200, ""},
		{"wrong signature", f.APIURL(), oauthHeader(wrongSig), 401, "invalid OAuth credentials or signature"},
		{"bearer on api", f.APIURL(), "Bearer the-token", 401, "bridge host only"},
		{"hmac refused", f.APIURL(), strings.Replace(oauthHeader(creds), "PLAINTEXT", "HMAC-SHA1", 1), 401, "PLAINTEXT signatures only"},
		{"unencoded & refused", f.APIURL(),
			`OAuth oauth_consumer_key="ck", oauth_token="tok", oauth_signature="c%26s%3Dcret%2F%2B&t%20s%25cret"`, 401, "not percent-encoded"},
		{"no method means plaintext", f.APIURL(),
			`OAuth oauth_consumer_key="ck", oauth_token="tok", oauth_signature="` +
				percentEncode(percentEncode(creds.ConsumerSecret)+"&"+percentEncode(creds.Secret)) + `"`, 200, ""},
		{"missing token", f.APIURL(), `OAuth oauth_consumer_key="ck", oauth_signature="x"`, 401, "missing oauth_token"},
		{"garbage", f.APIURL(), `OAuth what`, 401, "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := call(t, "GET", c.url+"/v2/self", c.auth)
			if a.status != c.want {
				t.Fatalf("status %d, want %d (%s)", a.status, c.want, a.body)
			}
			if c.want != 401 {
				return
			}
			var e struct {
				ID      int
				Message string
				Type    string
			}
			a.json(t, &e)
			if e.ID != 401 || e.Type != "error" || !strings.Contains(e.Message, c.msg) {
				t.Errorf("body %s, want id 401 and %q", a.body, c.msg)
			}
			// The message never echoes what the client sent.
			for _, s := range []string{"the-token", "nope", creds.Secret, creds.ConsumerSecret} {
				if strings.Contains(string(a.body), s) {
					t.Errorf("body %s echoes %q", a.body, s)
				}
			}
		})
	}
	// Every call was recorded, with the host it reached.
	calls := f.Calls()
	if len(calls) != len(cases) || calls[0].Host != "bridge" || calls[len(calls)-1].Host != "api" {
		t.Errorf("recorded %d calls (%+v)", len(calls), calls)
	}
}

func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{"abc-._~XYZ09": "abc-._~XYZ09", "a b&c=d/é": "a%20b%26c%3Dd%2F%C3%A9", "%": "%25"} {
		if got := percentEncode(in); got != want {
			t.Errorf("percentEncode(%q) = %q, want %q", in, got, want)
		}
	}
}

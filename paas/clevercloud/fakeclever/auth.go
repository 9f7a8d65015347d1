package fakeclever

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// hostKind says which API host a listener plays.
type hostKind int

const (
	hostBridge hostKind = iota // api-bridge.clever-cloud.com: API tokens (Bearer)
	hostAPI                    // api.clever-cloud.com: OAuth 1
)

func (k hostKind) String() string {
	if k == hostBridge {
		return "bridge"
	}
	return "api"
}

// checkAuth checks the request's credential the way the host it plays does. It
// returns "" when the credential is accepted, else the message of the 401. The
// messages never repeat what the client sent.
func (f *Fake) checkAuth(k hostKind, r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, rest, _ := strings.Cut(h, " ")
	switch {
	case h == "":
		return "Not authenticated: no Authorization header"
	case k == hostBridge && strings.EqualFold(scheme, "OAuth"):
		return "Not authenticated: this host accepts API tokens (Bearer) only; OAuth 1 goes to the API host"
	case k == hostBridge && !strings.EqualFold(scheme, "Bearer"):
		return "Not authenticated: unknown authorization scheme"
	case k == hostBridge:
		if !equal(strings.TrimSpace(rest), f.opts.Token) {
			return "Not authenticated: invalid or expired token"
		}
		return ""
	case strings.EqualFold(scheme, "Bearer"):
		// Service tokens are Bearer on the API host too, but the fake has none:
		// API tokens work on the bridge host only, as on the real platform.
		return "Not authenticated: API tokens are accepted on the bridge host only"
	case !strings.EqualFold(scheme, "OAuth"):
		return "Not authenticated: unknown authorization scheme"
	}
	if err := checkOAuth(rest, *f.opts.OAuth); err != nil {
		return "Not authenticated: " + err.Error()
	}
	return ""
}

// checkOAuth checks OAuth 1 header parameters (RFC 5849 §3.5.1) signed with
// PLAINTEXT: the signature is percentEncode(consumerSecret) & percentEncode(tokenSecret),
// and as every header parameter it is percent-encoded once more, so its & is sent as
// %26. HMAC signatures are refused: the fake does not check them.
func checkOAuth(params string, want OAuthCreds) error {
	p, err := parseOAuthParams(params)
	if err != nil {
		return err
	}
	switch p["oauth_signature_method"] {
	case "", "PLAINTEXT":
	case "HMAC-SHA1", "HMAC-SHA512":
		return errors.New("the fake checks PLAINTEXT signatures only")
	default:
		return errors.New("unknown oauth_signature_method")
	}
	if v, ok := p["oauth_version"]; ok && v != "1.0" {
		return errors.New("oauth_version must be 1.0")
	}
	for _, k := range []string{"oauth_consumer_key", "oauth_token", "oauth_signature"} {
		if _, ok := p[k]; !ok {
			return errors.New("missing " + k)
		}
	}
	sig := percentEncode(want.ConsumerSecret) + "&" + percentEncode(want.Secret)
	if !equal(p["oauth_consumer_key"], want.ConsumerKey) || !equal(p["oauth_token"], want.Token) || !equal(p["oauth_signature"], sig) {
		return errors.New("invalid OAuth credentials or signature")
	}
	return nil
}

// parseOAuthParams parses `k="v", k2="v2"` with percent-encoded values.
func parseOAuthParams(s string) (map[string]string, error) {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return nil, errors.New("malformed OAuth parameters")
		}
		raw := v[1 : len(v)-1]
		// Values are percent-encoded: a bare & (or any reserved character) means
		// the client forgot to encode, which the real API refuses too.
		if strings.ContainsAny(raw, "&\" =,") {
			return nil, errors.New("OAuth parameter " + k + " is not percent-encoded")
		}
		val, err := url.PathUnescape(raw)
		if err != nil {
			return nil, errors.New("OAuth parameter " + k + " is not percent-encoded")
		}
		if _, dup := out[k]; dup {
			return nil, errors.New("OAuth parameter " + k + " given twice")
		}
		out[k] = val
	}
	return out, nil
}

// percentEncode encodes s as RFC 5849 §3.6 says: everything but unreserved
// characters (ALPHA, DIGIT, "-", ".", "_", "~") as %XX, upper-case. The fake
// derives it from the standard library on purpose, rather than share the
// driver's own encoder: a mistake there must not pass its test for being made
// twice. QueryEscape escapes exactly those characters, but writes a space as "+".
func percentEncode(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

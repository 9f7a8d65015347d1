package clevercloud

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// authorization returns the Authorization header of one request. OAuth headers
// carry a fresh nonce and timestamp each time.
func (c *Client) authorization() string {
	if o := c.cfg.OAuth; o != nil {
		return oauthHeader(o, time.Now(), nonce())
	}
	return "Bearer " + c.cfg.Token.Reveal()
}

// oauthHeader builds an OAuth 1 header (RFC 5849 §3.5.1) signed with PLAINTEXT:
// the signature is the consumer secret and the token secret, each percent-encoded,
// joined by &; as every parameter it is percent-encoded once more in the header, so
// the & goes out as %26. PLAINTEXT is what Clever Cloud's own clients use over TLS.
func oauthHeader(o *OAuth, now time.Time, nonce string) string {
	sig := percentEncode(o.ConsumerSecret.Reveal()) + "&" + percentEncode(o.Secret.Reveal())
	params := [][2]string{
		{"oauth_consumer_key", o.ConsumerKey.Reveal()},
		{"oauth_token", o.Token.Reveal()},
		{"oauth_signature_method", "PLAINTEXT"},
		{"oauth_signature", sig},
		{"oauth_timestamp", strconv.FormatInt(now.Unix(), 10)},
		{"oauth_nonce", nonce},
		{"oauth_version", "1.0"},
	}
	var b strings.Builder
	b.WriteString("OAuth ")
	for i, p := range params {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `%s="%s"`, p[0], percentEncode(p[1]))
	}
	return b.String()
}

func nonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// percentEncode encodes s as RFC 5849 §3.6 says: everything but the unreserved
// characters (ALPHA, DIGIT, "-", ".", "_", "~") as %XX, upper-case.
func percentEncode(s string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

// redactor removes the credential's values from text that goes into a log line or
// an error (a server message, a transport error), in case one ever echoes them.
type redactor []string

func newRedactor(c Config) redactor {
	var r redactor
	add := func(s string) {
		if len(s) >= 4 { // shorter values would blank out ordinary words
			r = append(r, s, percentEncode(s))
		}
	}
	add(c.Token.Reveal())
	if o := c.OAuth; o != nil {
		for _, s := range []string{o.ConsumerKey.Reveal(), o.ConsumerSecret.Reveal(), o.Token.Reveal(), o.Secret.Reveal()} {
			add(s)
		}
	}
	return r
}

func (r redactor) clean(s string) string {
	for _, v := range r {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

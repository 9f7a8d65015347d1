package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sessions are stateless: the cookie carries its id, its expiry and the name
// given at sign-in, signed with HMAC-SHA256 under a key derived from the admin
// token. Changing the token signs every browser out; nothing is stored on the
// node, so every node of a cluster with the same token accepts the cookie.

// Cookie names and lifetimes.
const (
	// SessionCookie holds the signed session.
	SessionCookie = "reaper_session"
	// SessionTTL is how long a sign-in lasts.
	SessionTTL = 12 * time.Hour
	// loginCookie holds the nonce the sign-in form's CSRF token is tied to.
	loginCookie = "reaper_login"
	loginTTL    = time.Hour
	// flashCookie carries the outcome of an action across the redirect that follows it.
	flashCookie = "reaper_flash"
	flashTTL    = time.Minute
)

// CSRFHeader carries the CSRF token of a write to /api/ made with the session
// cookie (by the dashboard's script); forms carry it in the csrfField.
const (
	CSRFHeader = "X-CSRF-Token"
	csrfField  = "csrf"
)

// maxName bounds the name given at sign-in (it goes into the history as "by").
const maxName = 40

// session is a signed-in browser.
type session struct {
	ID      string // random, 128 bits in hex
	Name    string // optional, who signed in
	Expires time.Time
}

// keyring holds what the admin token is used for: its hash, to check a token
// given at sign-in in constant time, and the key that signs cookies and tokens.
type keyring struct {
	tokenSum [32]byte
	key      []byte
}

func newKeyring(token string) keyring {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("reaper dashboard cookie key v1"))
	return keyring{tokenSum: sha256.Sum256([]byte(token)), key: m.Sum(nil)}
}

// tokenOK reports whether given is the admin token, in time independent of
// where they differ and of their lengths (both are hashed first).
func (k keyring) tokenOK(given string) bool {
	sum := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(sum[:], k.tokenSum[:]) == 1
}

// mac signs msg for purpose (session, csrf, login, flash), so that a value
// signed for one purpose is worth nothing for another.
func (k keyring) mac(purpose, msg string) string {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(purpose + "\x00" + msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// macOK checks a signature in constant time.
func (k keyring) macOK(purpose, msg, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(k.mac(purpose, msg)))
}

// sign returns msg and its signature as one cookie value.
func (k keyring) sign(purpose, msg string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(msg)) + "." + k.mac(purpose, msg)
}

// open returns the message of a value made by sign, false when it was not
// signed with this key for this purpose.
func (k keyring) open(purpose, value string) (string, bool) {
	enc, sig, ok := strings.Cut(value, ".")
	if !ok {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !k.macOK(purpose, string(raw), sig) {
		return "", false
	}
	return string(raw), true
}

// newSession starts a session for name (trimmed and bounded), valid SessionTTL
// from now.
func newSession(name string, now time.Time) session {
	name = strings.TrimSpace(name)
	if r := []rune(name); len(r) > maxName {
		name = string(r[:maxName])
	}
	return session{ID: randomHex(16), Name: name, Expires: now.Add(SessionTTL).Truncate(time.Second)}
}

// encodeSession is the cookie value of s.
func (k keyring) encodeSession(s session) string {
	msg := "v1|" + strconv.FormatInt(s.Expires.Unix(), 10) + "|" + s.ID + "|" + s.Name
	return k.sign("session", msg)
}

// decodeSession reads a session cookie's value; false when it is not ours,
// was tampered with, or has expired at now.
func (k keyring) decodeSession(value string, now time.Time) (session, bool) {
	msg, ok := k.open("session", value)
	if !ok {
		return session{}, false
	}
	parts := strings.SplitN(msg, "|", 4)
	if len(parts) != 4 || parts[0] != "v1" || len(parts[2]) != 32 {
		return session{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return session{}, false
	}
	return session{ID: parts[2], Name: parts[3], Expires: time.Unix(exp, 0)}, true
}

// csrf is the CSRF token of a session: tied to its id, so it is worthless
// with another session and ends with it.
func (k keyring) csrf(s session) string { return k.mac("csrf", s.ID) }

// csrfOK checks a CSRF token against the session, in constant time.
func (k keyring) csrfOK(s session, token string) bool {
	return token != "" && k.macOK("csrf", s.ID, token)
}

// loginCSRF is the token of the sign-in form, tied to the nonce of the
// browser's login cookie (there is no session yet to tie it to).
func (k keyring) loginCSRF(nonce string) string { return k.mac("login", nonce) }

// session returns the request's valid session, if any.
func (k keyring) session(r *http.Request, now time.Time) (session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return session{}, false
	}
	return k.decodeSession(c.Value, now)
}

// cookie is a cookie of the dashboard: for the whole listener, never readable
// by scripts, never sent by another site's page, and Secure when the request
// came over TLS (the admin listener serves HTTPS in a cluster with TLS).
func cookie(r *http.Request, name, value string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{
		Name: name, Value: value, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	}
	if maxAge > 0 {
		c.MaxAge = int(maxAge / time.Second)
		c.Expires = time.Now().Add(maxAge)
	} else {
		c.MaxAge = -1 // delete
		c.Expires = time.Unix(0, 0)
	}
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b)
}

package dashboard

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func TestSession_RoundTrip(t *testing.T) {
	k := newKeyring("the-admin-token")
	s := newSession("  alice|ops  ", t0)
	got, ok := k.decodeSession(k.encodeSession(s), t0.Add(time.Hour))
	if !ok {
		t.Fatal("a fresh session does not decode")
	}
	if got.ID != s.ID || got.Name != "alice|ops" || !got.Expires.Equal(t0.Add(SessionTTL)) {
		t.Errorf("decoded %+v, want id %s, name alice|ops, expiry %v", got, s.ID, t0.Add(SessionTTL))
	}
	if long := newSession(strings.Repeat("é", 100), t0); len([]rune(long.Name)) != maxName {
		t.Errorf("name of %d runes kept, want %d", len([]rune(long.Name)), maxName)
	}
}

func TestSession_RefusesWhatItDidNotSign(t *testing.T) {
	k := newKeyring("the-admin-token")
	s := newSession("alice", t0)
	good := k.encodeSession(s)
	enc, sig, _ := strings.Cut(good, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[3] == 'A' {
			b[3] = 'B'
		} else {
			b[3] = 'A'
		}
		return string(b)
	}
	for name, value := range map[string]string{
		"expired":              "", // tested below with a later now
		"another token's key":  newKeyring("another-token").encodeSession(s),
		"payload changed":      flip(enc) + "." + sig,
		"signature changed":    enc + "." + flip(sig),
		"no signature":         enc,
		"signed for the flash": k.sign("flash", "v1|9999999999|"+s.ID+"|alice"),
		"empty":                ".",
	} {
		if name == "expired" {
			value = good
			if _, ok := k.decodeSession(value, s.Expires); ok {
				t.Errorf("%s: accepted at its expiry", name)
			}
			continue
		}
		if _, ok := k.decodeSession(value, t0); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCSRF_IsTiedToTheSessionAndTheToken(t *testing.T) {
	k := newKeyring("the-admin-token")
	a, b := newSession("", t0), newSession("", t0)
	if !k.csrfOK(a, k.csrf(a)) {
		t.Fatal("a session's own CSRF token is refused")
	}
	if k.csrfOK(b, k.csrf(a)) {
		t.Error("another session's CSRF token is accepted")
	}
	if k.csrfOK(a, newKeyring("rotated-token").csrf(a)) {
		t.Error("a CSRF token made under another admin token is accepted")
	}
	if k.csrfOK(a, "") {
		t.Error("an empty CSRF token is accepted")
	}
	if k.macOK("login", "nonce", k.csrf(newSession("", t0))) {
		t.Error("a session's CSRF token passes as the sign-in form's")
	}
}

func TestTokenOK(t *testing.T) {
	k := newKeyring("s3cret-token")
	for given, want := range map[string]bool{"s3cret-token": true, "s3cret-toke": false, "s3cret-token ": false, "": false, "S3CRET-TOKEN": false} {
		if got := k.tokenOK(given); got != want {
			t.Errorf("tokenOK(%q) = %v, want %v", given, got, want)
		}
	}
}

package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	// HeaderSignature is "t=<unix seconds>,v1=<hex HMAC-SHA256>", the HMAC keyed
	// with the webhook's secret over "<t>.<body>" (see Sign). Absent when the
	// webhook has no secret.
	HeaderSignature = "Reaper-Signature"
	// HeaderEventID is the event's id, the same on every attempt: the
	// receiver's idempotency key.
	HeaderEventID = "Reaper-Event-Id"
	// HeaderEventType is the event's type (status, error, hold, …).
	HeaderEventType = "Reaper-Event-Type"
	// HeaderAttempt counts the attempts to deliver the event, from 1 (on this
	// leader: a new leader counts from 1 again).
	HeaderAttempt = "Reaper-Delivery-Attempt"
)

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("webhook: no Reaper-Signature, or not of the form t=…,v1=…")
	ErrBadSignature = errors.New("webhook: the signature does not match the body")
	ErrTooOld       = errors.New("webhook: the signature's timestamp is outside the tolerance")
)

// Sign returns the Reaper-Signature of body sent at at: the time in unix seconds
// and the hex HMAC-SHA256, keyed with secret, of "<t>.<body>". Signing the time
// with the body lets a receiver refuse a replayed request (see Verify).
func Sign(secret []byte, at time.Time, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac(secret, t, body))
}

func mac(secret []byte, t string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(t))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks header, a Reaper-Signature, against body, as a receiver in Go
// would: one of its v1 signatures (there may be several, when a secret is being
// replaced) must be the HMAC of "<t>.<body>" with secret, compared in constant
// time, and t must be within tolerance of now (0: any t). body must be the
// request's body exactly as received, before any JSON decoding.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var t string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
		case k == "t":
			t = v
		case k == "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	unix, err := strconv.ParseInt(t, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	want := mac(secret, t, body)
	matched := false
	for _, sig := range sigs {
		matched = hmac.Equal(sig, want) || matched
	}
	if !matched {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(unix, 0)); tolerance > 0 && (d > tolerance || d < -tolerance) {
		return ErrTooOld
	}
	return nil
}

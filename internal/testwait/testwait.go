// Package testwait waits, in tests, for a condition that another goroutine or
// process makes true: it polls the condition every few milliseconds until it holds
// or a time limit passes. It is for what a test cannot be told by a channel or
// synctest.Wait (a socket opening, a log line written, a record in Valkey).
//
// Only tests import it.
package testwait

import (
	"testing"
	"time"
)

// The pause between two polls starts short, so that a condition about to hold
// costs little, and grows to maxPause, so that a long wait does not spin.
const (
	firstPause = time.Millisecond
	maxPause   = 10 * time.Millisecond
)

// For polls cond until it returns true. If limit passes first, it fails the test
// with "timed out after <limit>: waiting for <what>". It blocks until cond holds
// or about limit has passed. cond runs on the caller's goroutine, so it may itself
// call t.Fatal or t.Skip.
func For(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(limit, cond) {
		t.Fatalf("timed out after %v: waiting for %s", limit, what)
	}
}

// Until polls cond until it returns true or limit passes, and reports whether it
// held: for callers that fail with their own message (one that says what they saw
// last), or that go on either way. cond is called at least once, and once more
// when limit has passed.
func Until(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	pause := firstPause
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, maxPause)
	}
	return true
}

package reaper

import "testing"

// Each way a hold ends labels the request and counts as a wait as it did when
// the plugin read the holds' results itself.
func TestHoldEnd_OutcomeAndWaitOfEachResult(t *testing.T) {
	cases := []struct {
		res     holdResult
		outcome string
		waited  bool
	}{
		{holdReleased, OutcomeHeldThenProxied, true},
		{holdReady, "", false},
		{holdFailed, OutcomeError, true},
		{holdTimedOut, OutcomeTimeout, true},
		{holdGone, OutcomeClientClosed, false},
		{holdTooMany, OutcomeTooManyHeld, true},
		{holdShutdown, OutcomeUnavailable, true},
	}
	for _, c := range cases {
		end := holdEndOf(c.res, nil)
		if got := heldOutcome(end); got != c.outcome {
			t.Errorf("result %d: outcome %q, want %q", c.res, got, c.outcome)
		}
		if end.Waited() != c.waited {
			t.Errorf("result %d: waited %v, want %v", c.res, end.Waited(), c.waited)
		}
		if end.Released != (c.res == holdReleased) {
			t.Errorf("result %d: released %v", c.res, end.Released)
		}
	}
	// The end of a caller that could not be parked and left (parkedHold.await).
	if gone := (HoldEnd{Err: ErrCallerGone}); gone.Waited() || heldOutcome(gone) != OutcomeClientClosed {
		t.Errorf("a caller gone: waited %v, outcome %q", gone.Waited(), heldOutcome(gone))
	}
}

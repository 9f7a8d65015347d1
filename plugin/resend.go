package plugin

import (
	"time"
)

// A request may be sent to its backend again, several times, when a plugin asks
// for it (Exchange.ResendOnFailure): the reaper plugin does so for a request
// released right after its app woke, whose app may accept connections a moment
// before it serves them (a container engine's port proxy accepts, then closes
// the connection while the app inside is not listening yet).

// SendFailure is an attempt to send a request to its backend that failed before
// any byte of the backend's answer arrived.
type SendFailure struct {
	// Err is the transport's error.
	Err error
	// Attempt counts the attempts that failed so far, this one included.
	Attempt int
	// NeverSent: the connection never opened (refused, unreachable): the backend
	// cannot have seen the request.
	NeverSent bool
	// BodyUnsent: the request has a body, none of which left the gateway (the
	// connection broke before the transport began sending it, as it does while
	// waiting for a 100 Continue): the backend saw at most the request's head.
	BodyUnsent bool
}

// ResendOnFailure asks the gateway to consult f when this request's attempt to
// reach its backend fails before any byte of the answer arrived — the connection
// refused, reset or closed — and the request can be sent again whole (its body
// is in memory, or none of it was read yet). f returns how long to wait before
// sending it again, on a new connection, or false to leave the failure to the
// gateway's usual handling (the route's DialFailureHandlers, the one resend of a
// body in memory, the 502). f is asked after every such failure, so it bounds the
// attempts; the wait ends early, and nothing more is sent, when the client goes
// away. Call it from an access step, before the request is forwarded.
func (ex *Exchange) ResendOnFailure(f func(SendFailure) (wait time.Duration, ok bool)) {
	if ex.st != nil {
		ex.st.resend = f
	}
}

// resendAsked asks the request's resend function about err, a failed attempt,
// when the request may be sent again whole; true means forward sends it again
// after st.resendWait.
func (st *state) resendAsked(err error) bool {
	if st.resend == nil || st.answering.Load() {
		return false
	}
	neverSent := isDialFailure(err)
	if !neverSent && !connectionLost(err) {
		return false
	}
	b := &st.body
	sent := b.n.Load()
	if !b.buffered && sent > 0 {
		return false // part of a streamed body is gone: it cannot be sent whole
	}
	st.attempts++
	unsent := sent == 0 && (st.ex.Request.ContentLength > 0 || len(b.data) > 0)
	wait, ok := st.resend(SendFailure{Err: err, Attempt: st.attempts, NeverSent: neverSent, BodyUnsent: unsent})
	if !ok {
		return false
	}
	b.rewind()
	st.resendErr, st.resendWait = err, wait
	return true
}

// waitToResend waits d before a request is sent again; false means the client
// went away meanwhile.
func (st *state) waitToResend(d time.Duration) bool {
	if d <= 0 {
		return st.ex.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-st.ex.Context().Done():
		return false
	}
}

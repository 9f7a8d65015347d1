package reaper

import (
	"context"
	"sync"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// A held request, from the plugin's side: its small body is read, then it waits
// (parked off its goroutine when the gateway can park it, on its goroutine
// otherwise) until its hold ends, and is answered by how the hold ended
// (afterHold): sent to the app, or given a 503 or 504 that says why. It holds
// through the route's port (p.route, port.go), as a TCP route does.

// holdThenAdmit holds the request until its app is ready, then lets it through;
// or answers it if the hold ends otherwise.
func (p *Plugin) holdThenAdmit(ex *plugin.Exchange) (*plugin.Answer, error) {
	// The fail timeout counts from the request's arrival, however many times it
	// was held or parked since.
	deadline := ex.Start.Add(p.FailTimeout.D())
	if err := p.bufferHeldBody(ex, deadline); err != nil {
		// The client failed mid-body, or sent it too slowly: the server has
		// given up on its connection, nothing can be answered.
		return &plugin.Answer{Status: StatusClientClosed}, nil
	}
	for {
		end, parked := p.wait(ex, deadline)
		if parked {
			return nil, plugin.ErrParked
		}
		if answer, done := p.afterHold(ex, end); done {
			return answer, nil
		}
	}
}

// bufferHeldBody reads a small body into memory, once per request, so that a
// client that gives up while its request is held is noticed at once (net/http
// watches a connection only once its body is read) and its request never reaches
// the app: a POST held with its body unread would be executed even though its
// client had retried. It also lets the request be parked. Larger bodies, and any
// body past the node's budget, stay unread until sent. Reading stops at deadline.
func (p *Plugin) bufferHeldBody(ex *plugin.Exchange, deadline time.Time) error {
	r := ex.Request
	if r.ContentLength == 0 || ex.Value(bodyReservedKey{}) != nil {
		return nil
	}
	want := int64(heldBodyLimit)
	if r.ContentLength > 0 {
		want = min(want, r.ContentLength)
	}
	if !p.route.ReserveBody(want) {
		return nil
	}
	ex.SetValue(bodyReservedKey{}, true)
	ex.OnDone(func() { p.route.ReleaseBody(want) })
	// A client that sends its body slowly must not keep a goroutine past the
	// fail timeout either: its connection is closed then.
	_ = ex.SetReadDeadline(deadline)
	if _, err := ex.BufferBody(heldBodyLimit); err != nil {
		return err // the deadline stays: nothing more is read from this client
	}
	_ = ex.SetReadDeadline(time.Time{})
	return nil
}

type (
	parkedKey       struct{} // the *parkedHold of a parked request
	bodyReservedKey struct{} // the body's share of the node's budget is taken
)

// wait holds the request until its app is ready, or the hold ends otherwise. A
// request the gateway can park waits off its goroutine (parked): its hold's
// end resumes it. Others wait here. It returns how the hold ended.
func (p *Plugin) wait(ex *plugin.Exchange, deadline time.Time) (end HoldEnd, parked bool) {
	r := p.route
	if !ex.CanPark() {
		// An HTTP/1 client whose body is not read yet is not watched by
		// net/http: the gateway watches it, so that one that leaves frees its
		// place at once and its request never reaches the app.
		ctx, gone := context.WithCancel(ex.Context())
		defer gone()
		defer ex.WatchHangUp(gone)()
		return r.Wait(ctx, deadline), false
	}
	ph := newParkedHold(func() { r.GiveBack(true) })
	cancel, end, started := r.StartHold(deadline, ph.settle)
	if !started {
		return end, false
	}
	pk := ex.Park(func() { cancel() })
	if pk == nil { // the connection could not be taken over: wait here
		return ph.await(ex.Context(), cancel), false
	}
	ex.SetValue(parkedKey{}, ph)
	ph.park(pk)
	return HoldEnd{}, true
}

// resumedHold returns the hold of a parked request that was resumed, once.
func resumedHold(ex *plugin.Exchange) *parkedHold {
	ph, _ := ex.Value(parkedKey{}).(*parkedHold)
	if ph != nil {
		ex.SetValue(parkedKey{}, nil)
	}
	return ph
}

// afterHold answers for how a hold ended (and the app's record it ended on);
// done false means hold again (the app was put back to sleep between its
// release and now).
func (p *Plugin) afterHold(ex *plugin.Exchange, end HoldEnd) (answer *plugin.Answer, done bool) {
	p.route.ObserveHeld(ex.Start, end)
	ex.Outcome = heldOutcome(end)
	rec := end.Rec
	switch end.Err {
	case nil:
		// A crawler's file (not_activity) is served, but is not a visit.
		if _, admitted := p.admit(ex, p.isNotActivity(ex.Request)); !admitted {
			if end.Released {
				p.route.GiveBack(true) // asleep again: nothing went
			}
			return nil, false
		}
		// Right after a wake, the app may take its connection and drop it:
		// it is sent again (resend.go).
		p.resendReleased(ex)
		if end.Released {
			// Its place in the release window is given back when the app's
			// answer begins (TransformResponse), or when it ends without one.
			crowded := p.route.Crowded() && ex.Request.ProtoMajor == 1
			ex.SetValue(releasedKey{}, &releasedPlace{closeAfter: crowded})
			ex.OnDone(func() { p.giveBackPlace(ex, false) })
		}
		return nil, true
	case ErrAppFailed:
		return p.failedAnswer(ex, rec), true
	case ErrHoldTimeout:
		st := p.route.Status()
		if rec != nil {
			st = rec.Status // as it was when the holds timed out together (hold.go timedOut)
		}
		return p.timeoutAnswer(ex, st), true
	case ErrTooManyHeld:
		return p.tooManyAnswer(ex, p.route.Status()), true
	case ErrShuttingDown:
		return p.shutdownAnswer(ex, p.route.Status()), true
	default: // ErrCallerGone: nobody to answer
		return &plugin.Answer{Status: StatusClientClosed}, true
	}
}

// heldOutcome labels a request by how its hold ended (plugin.Exchange.Outcome).
func heldOutcome(end HoldEnd) string {
	switch end.Err {
	case nil:
		if end.Released {
			return OutcomeHeldThenProxied
		}
		return ""
	case ErrAppFailed:
		return OutcomeError
	case ErrHoldTimeout:
		return OutcomeTimeout
	case ErrTooManyHeld:
		return OutcomeTooManyHeld
	case ErrShuttingDown:
		return OutcomeUnavailable
	default:
		return OutcomeClientClosed
	}
}

// releasedPlace is a released request's place in its app's release window.
type releasedPlace struct {
	given      bool
	closeAfter bool // released from a crowd: its connection closes after the answer
}

type releasedKey struct{}

// giveBackPlace gives back the place of a released request in its app's release
// window, once; ok says whether the app answered it well. It returns the place,
// nil for a request that was not released.
func (p *Plugin) giveBackPlace(ex *plugin.Exchange, ok bool) *releasedPlace {
	rp, _ := ex.Value(releasedKey{}).(*releasedPlace)
	if rp == nil || rp.given {
		return nil
	}
	rp.given = true
	p.route.GiveBack(ok)
	return rp
}

// StatusClientClosed is the status logged for a held request whose client went
// away before the app woke (nothing is written to the client).
const StatusClientClosed = 499

// parkedHold is the hold of a request that may be parked (plugin.Exchange.Park):
// its result resumes the parked request, which reads it when the gateway runs the
// plugin again; a request that could not be parked after all waits on ch.
type parkedHold struct {
	ch   chan HoldEnd // capacity 1
	lost func()       // gives back a release window's place when the client left as it was released

	mu      sync.Mutex
	pk      *plugin.Parked
	end     HoldEnd
	settled bool
}

func newParkedHold(lost func()) *parkedHold {
	return &parkedHold{ch: make(chan HoldEnd, 1), lost: lost}
}

// settle is the hold's done function (Route.StartHold).
func (ph *parkedHold) settle(end HoldEnd) {
	ph.mu.Lock()
	ph.end, ph.settled = end, true
	pk := ph.pk
	ph.mu.Unlock()
	if pk != nil {
		ph.resume(pk, end)
		return
	}
	ph.ch <- end
}

// await waits on the request's goroutine, when it could not be parked, for the
// hold's end or ctx's; cancel withdraws the hold (Route.StartHold).
func (ph *parkedHold) await(ctx context.Context, cancel func() bool) HoldEnd {
	select {
	case end := <-ph.ch:
		return end
	case <-ctx.Done():
		if cancel() {
			return HoldEnd{Err: ErrCallerGone}
		}
		return <-ph.ch
	}
}

// resume resumes the parked request, whose hold ended with end. Resume is false
// only when the client left: nobody to answer, and a release window's place to
// give back.
func (ph *parkedHold) resume(pk *plugin.Parked, end HoldEnd) {
	if !pk.Resume() && end.Released {
		ph.lost()
	}
}

// park attaches the parked request, resuming it at once if the hold ended already.
func (ph *parkedHold) park(pk *plugin.Parked) {
	ph.mu.Lock()
	ph.pk = pk
	settled, end := ph.settled, ph.end
	ph.mu.Unlock()
	if settled {
		ph.resume(pk, end)
	}
}

// result is how the hold ended.
func (ph *parkedHold) result() HoldEnd {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.end
}

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
// (afterHold): sent to the app, or given a 503 or 504 that says why.

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
		res, rec := p.wait(ex, deadline)
		if res == holdParked {
			return nil, plugin.ErrParked
		}
		if answer, done := p.afterHold(ex, res, rec); done {
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
	if !p.engine.holds.reserveBody(want) {
		return nil
	}
	ex.SetValue(bodyReservedKey{}, true)
	ex.OnDone(func() { p.engine.holds.releaseBody(want) })
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
// request the gateway can park waits off its goroutine (holdParked): its hold's
// result resumes it. Others wait here. It returns how the hold ended and the
// app's record it ended on.
func (p *Plugin) wait(ex *plugin.Exchange, deadline time.Time) (holdResult, *Record) {
	holds, a := p.engine.holds, p.app
	if !ex.CanPark() {
		// An HTTP/1 client whose body is not read yet is not watched by
		// net/http: the gateway watches it, so that one that leaves frees its
		// place at once and its request never reaches the app.
		ctx, gone := context.WithCancel(ex.Context())
		defer gone()
		defer ex.WatchHangUp(gone)()
		return holds.wait(ctx, a, p.MaxHeld, p.readyDelay, p.FailTimeout.D(), deadline)
	}
	ph := newParkedHold(func() { holds.releaseEnded(a, true) })
	h, res, rec := holds.start(a, p.MaxHeld, p.readyDelay, p.FailTimeout.D(), deadline, ph.settle)
	if h == nil {
		return res, rec
	}
	pk := ex.Park(func() { holds.cancel(a, h) })
	if pk == nil { // the connection could not be taken over: wait here
		return holds.await(ex.Context(), a, h, ph.ch)
	}
	ex.SetValue(parkedKey{}, ph)
	ph.park(pk)
	return holdParked, nil
}

// resumedHold returns the hold of a parked request that was resumed, once.
func resumedHold(ex *plugin.Exchange) *parkedHold {
	ph, _ := ex.Value(parkedKey{}).(*parkedHold)
	if ph != nil {
		ex.SetValue(parkedKey{}, nil)
	}
	return ph
}

// afterHold answers for a hold's result, and rec, the app's record the hold
// ended on; done false means hold again (the app was put back to sleep between
// its release and now).
func (p *Plugin) afterHold(ex *plugin.Exchange, res holdResult, rec *Record) (answer *plugin.Answer, done bool) {
	if res != holdGone && res != holdReady && res != holdParked {
		p.engine.observer.HeldWait(p.app.id, time.Since(ex.Start))
	}
	ex.Outcome = holdOutcomes[res]
	switch res {
	case holdReleased, holdReady:
		if _, admitted := p.admit(ex); !admitted {
			if res == holdReleased {
				p.engine.holds.releaseEnded(p.app, true) // asleep again: nothing went
			}
			return nil, false
		}
		// Right after a wake, the app may take its connection and drop it:
		// it is sent again (resend.go).
		p.resendReleased(ex)
		if res == holdReleased {
			// Its place in the release window is given back when the app's
			// answer begins (TransformResponse), or when it ends without one.
			crowded := p.engine.holds.held.Load() > p.engine.holds.crowdedAbove && ex.Request.ProtoMajor == 1
			ex.SetValue(releasedKey{}, &releasedPlace{closeAfter: crowded})
			ex.OnDone(func() { p.giveBackPlace(ex, false) })
		}
		return nil, true
	case holdFailed:
		return p.failedAnswer(ex, rec), true
	case holdTimedOut:
		st := p.app.status()
		if rec != nil {
			st = rec.Status // as it was when the holds timed out together (hold.go timedOut)
		}
		return p.timeoutAnswer(ex, st), true
	case holdTooMany:
		return p.tooManyAnswer(ex, p.app.status()), true
	case holdShutdown:
		return p.shutdownAnswer(ex, p.app.status()), true
	default: // holdGone: nobody to answer
		return &plugin.Answer{Status: StatusClientClosed}, true
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
	p.engine.holds.releaseEnded(p.app, ok)
	return rp
}

// StatusClientClosed is the status logged for a held request whose client went
// away before the app woke (nothing is written to the client).
const StatusClientClosed = 499

// parkedHold is the hold of a request that may be parked (plugin.Exchange.Park):
// its result resumes the parked request, which reads it when the gateway runs the
// plugin again; a request that could not be parked after all waits on ch.
type parkedHold struct {
	ch   chan holdEnd // capacity 1
	lost func()       // gives back a release window's place when the client left as it was released

	mu      sync.Mutex
	pk      *plugin.Parked
	end     holdEnd
	settled bool
}

func newParkedHold(lost func()) *parkedHold {
	return &parkedHold{ch: make(chan holdEnd, 1), lost: lost}
}

// settle is the holder's done function.
func (ph *parkedHold) settle(r holdResult, rec *Record) {
	ph.mu.Lock()
	ph.end, ph.settled = holdEnd{r, rec}, true
	pk := ph.pk
	ph.mu.Unlock()
	if pk != nil {
		ph.resume(pk, r)
		return
	}
	ph.ch <- holdEnd{r, rec}
}

// resume resumes the parked request, whose hold ended with r. Resume is false
// only when the client left: nobody to answer, and a release window's place to
// give back.
func (ph *parkedHold) resume(pk *plugin.Parked, r holdResult) {
	if !pk.Resume() && r == holdReleased {
		ph.lost()
	}
}

// park attaches the parked request, resuming it at once if the hold ended already.
func (ph *parkedHold) park(pk *plugin.Parked) {
	ph.mu.Lock()
	ph.pk = pk
	settled, r := ph.settled, ph.end.res
	ph.mu.Unlock()
	if settled {
		ph.resume(pk, r)
	}
}

// result is how the hold ended, and the app's record it ended on.
func (ph *parkedHold) result() (holdResult, *Record) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.end.res, ph.end.rec
}

package reaper

import (
	"net/http"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// A request released from a hold goes to an app that has just woken, and an app
// that has just woken may take a connection a moment before it serves it: a
// container engine's port proxy (docker-proxy) accepts at once and closes the
// connection while the app inside is not listening yet; a process may be seen
// ready by a probe of another port. Such a request is sent again, after a short
// back-off, until the route's fail_timeout (counted from its arrival, as its hold
// was), when its connection is refused, reset or closed before any byte of the
// answer, and sending it again cannot make the app do twice what it did once:
//
//   - the connection never opened: the app cannot have seen the request, whatever
//     its method;
//   - a GET or a HEAD, which do not change anything;
//   - any other request whose body the app has not begun to receive (the
//     connection broke before the gateway sent its first byte, as when it waits
//     for a 100 Continue): the app saw at most its head.
//
// Never another request whose body was sent, even though the body is held in
// memory and could be sent again: the app may have acted on it before its
// connection broke. (Such a request gets the gateway's one resend of a body in
// memory on a new connection, as every request does, then the 502.) A body that
// was streamed, part of it sent, cannot be sent again at all.
//
// The wake's grace ends as soon as the app has answered one of its held requests
// since it woke: from then on it serves connections, and one that breaks is the
// app's doing, answered as any other request's (a 502). It also ends when the app
// is no longer up (a crash: the request is then handled as for a sleeping app).

// Back-off between the attempts of a released request: resendFirstWait, doubled
// at each failure, up to resendMaxWait.
const (
	resendFirstWait = 50 * time.Millisecond
	resendMaxWait   = time.Second
)

// resendAfterWake decides whether a request released from a hold, whose attempt
// failed as f says, is sent again, and after how long. woke says that the app is
// up and has not answered a held request since its wake; deadline is the
// request's fail timeout. Pure: it takes now.
func resendAfterWake(method string, f plugin.SendFailure, woke bool, now, deadline time.Time) (time.Duration, bool) {
	safe := f.NeverSent || method == http.MethodGet || method == http.MethodHead || f.BodyUnsent
	if !safe || !woke {
		return 0, false
	}
	wait := resendMaxWait
	if f.Attempt > 0 && f.Attempt <= 5 {
		wait = min(resendFirstWait<<(f.Attempt-1), resendMaxWait)
	}
	if !now.Add(wait).Before(deadline) {
		return 0, false
	}
	return wait, true
}

// resendKey marks a request released from a hold, whose failed attempts are
// sent again (resendReleased).
type resendKey struct{}

// resendReleased lets ex, a request released from its hold, be sent again after
// its app's wake breaks its connection (see resendAfterWake).
func (p *Plugin) resendReleased(ex *plugin.Exchange) {
	deadline := ex.Start.Add(p.FailTimeout.D())
	method := ex.Request.Method
	ex.SetValue(resendKey{}, true)
	ex.ResendOnFailure(func(f plugin.SendFailure) (time.Duration, bool) {
		wait, ok := resendAfterWake(method, f, p.route.FreshlyWoken(), time.Now(), deadline)
		if ok {
			if o, can := p.opts.Observer.(ResendObserver); can {
				o.HeldResent(p.AppID)
			}
		}
		return wait, ok
	})
}

// ResendObserver is an Observer that is also told each time a request released
// from a hold is sent again after its connection broke (resend.go). Optional: an
// Observer without it is not told.
type ResendObserver interface {
	HeldResent(app string)
}

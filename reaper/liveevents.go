package reaper

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/reapergw/reaper/page"
	"github.com/reapergw/reaper/plugin"
)

// WellKnownEventsPath is the app's live progress, for its waiting page: a
// stream of server-sent events (text/event-stream) on the app's own host. A
// "state" event (page.EventState) says at once, then at every change, the app's
// status, the page's state, the times of the wake's phases and the app's usual
// boot time; a last "ready" event (page.EventReady) says requests go through to
// the app now. The stream also ends when the app goes to Error (after its
// state), when the route's fail timeout has passed, when the client goes away
// and when the node shuts down. It is what a poll is: never traffic, and while
// the app sleeps it asks for a wake as the reference's polls do (at once, then
// every 5 s, coalesced with every other ask).
const WellKnownEventsPath = "/.well-known/reaper/events"

// DefaultMaxLiveStreams bounds the live progress streams open on a node, all
// apps together (EngineOptions.MaxLiveStreams); past it, a stream is refused
// with a 503 and its page polls instead.
const DefaultMaxLiveStreams = 1000

// liveAskEvery is how often an open stream of a sleeping app asks for its wake
// again, as often as the reference's page polls; liveKeepAlive how long a stream
// stays silent before a comment keeps proxies from closing it.
const (
	liveAskEvery  = 5 * time.Second
	liveKeepAlive = 15 * time.Second
)

// OutcomeEvents labels a live progress stream, OutcomePreview a preview of the
// waiting page (plugin.Exchange.Outcome).
const (
	OutcomeEvents  = "events"
	OutcomePreview = "preview"
)

// liveEvents answers WellKnownEventsPath: the stream, or a 503 when the node
// has as many open as it allows.
func (p *Plugin) liveEvents(ex *plugin.Exchange) *plugin.Answer {
	ex.Class, ex.Outcome = kindNames[kindPoll], OutcomeEvents
	if a := onlyGet(ex, WellKnownEventsPath); a != nil {
		return a
	}
	r := p.route
	st := r.Status()
	release, ok := p.engine.TakeStream()
	if !ok {
		ans := answer(ex, http.StatusServiceUnavailable, st, map[string]any{
			"error": "too many live progress streams on this node, poll instead", "status": string(st)})
		ans.Header.Set("Retry-After", "5")
		return ans
	}
	if st.Asleep() {
		// A stream asks for the wake as the page's request did: past a wake
		// limit, it is refused like that request (a script cannot open streams
		// to wake apps the limit refuses it).
		if wait, limited := r.AskWakeFrom(ex.ClientIP, st); limited {
			release()
			ans, _ := p.tooManyWakesAnswer(ex, kindPoll, st, wait) // JSON: no error
			return ans
		}
	}
	ex.OnDone(release)
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx and its kin: pass each event on at once
	h.Set(HeaderStatus, st.Marker())
	ctx := ex.Context()
	return &plugin.Answer{Status: http.StatusOK, Header: h, Stream: func(w io.Writer, flush func() error) {
		p.streamProgress(ctx, w, flush)
	}}
}

// onlyGet answers a request for one of reaper's paths that is neither GET nor
// HEAD with a 405; nil for the others.
func onlyGet(ex *plugin.Exchange, path string) *plugin.Answer {
	if m := ex.Request.Method; m == http.MethodGet || m == http.MethodHead {
		return nil
	}
	a := plugin.JSONAnswer(http.StatusMethodNotAllowed, map[string]any{"error": path + " answers GET and HEAD only"})
	a.Header.Set("Allow", "GET, HEAD")
	return a
}

// streamProgress writes the app's progress to w on the request's goroutine
// until the stream ends (see WellKnownEventsPath). An event is written only
// when something it says changed, into one buffer reused for the stream's
// life.
func (p *Plugin) streamProgress(ctx context.Context, w io.Writer, flush func() error) {
	r, stopping := p.route, p.engine.Stopping()
	buf := make([]byte, 0, 512)
	end := time.NewTimer(p.FailTimeout.D())
	defer end.Stop()
	tick := time.NewTicker(liveAskEvery)
	defer tick.Stop()
	ready := time.NewTimer(time.Hour)
	ready.Stop()
	defer ready.Stop()
	var last wakeView
	sent, quiet := false, time.Duration(0)
	send := func(b []byte) bool {
		_, err := w.Write(b)
		return err == nil && flush() == nil
	}
	for {
		changed := r.Changed() // before reading the record, so no change is missed
		v := routeView(r, time.Now())
		if k := v.key(); !sent || k != last {
			event := page.EventState
			if v.state == page.StateReady {
				event = page.EventReady
			}
			if buf = page.AppendEvent(buf[:0], event, string(v.status), v.state, v.progress); !send(buf) {
				return
			}
			last, sent, quiet = k, true, 0
		}
		if v.state == page.StateReady || v.state == page.StateError {
			return
		}
		if !v.readyAt.IsZero() {
			ready.Reset(time.Until(v.readyAt))
		}
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-end.C:
			return
		case <-changed:
		case <-ready.C:
		case <-tick.C:
			if r.Status().Asleep() {
				r.AskWake()
			}
			if quiet += liveAskEvery; quiet >= liveKeepAlive {
				if !send(keepAlive) {
					return
				}
				quiet = 0
			}
		}
	}
}

// keepAlive is the comment a silent stream sends; browsers ignore it.
var keepAlive = []byte(": keep-alive\n\n")

// key is what an event of v says that can change, without the time waited
// (which the page counts itself).
func (v wakeView) key() wakeView {
	v.progress.Waited, v.readyAt = 0, time.Time{}
	return v
}

package reaper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// PluginID is the id routes use for the reaper plugin.
const PluginID = "reaper"

// ServiceName is the name under which the binary registers the node's Engine for
// the reaper plugin (plugin.ProvisionContext.Services).
const ServiceName = "reaper"

func init() {
	plugin.Register(plugin.Info{ID: PluginID, New: func() plugin.Plugin {
		return &Plugin{Config: DefaultConfig()}
	}})
}

// Plugin is the reaper plugin on one route, in the validate-access step: it lets
// requests for an awake app through (counting them as traffic until they end) and
// answers, holds or wakes for an app that sleeps. Put it after authentication
// plugins, so anonymous requests never wake an app.
type Plugin struct {
	Config

	engine     *Engine
	app        *app
	routeID    string
	routeName  string
	readyDelay time.Duration
	log        *slog.Logger
}

var (
	_ plugin.AccessValidator     = (*Plugin)(nil)
	_ plugin.RequestTransformer  = (*Plugin)(nil)
	_ plugin.DialFailureHandler  = (*Plugin)(nil)
	_ plugin.ResponseTransformer = (*Plugin)(nil)
	_ plugin.Provisioner         = (*Plugin)(nil)
	_ plugin.CleanerUpper        = (*Plugin)(nil)
)

// Provision registers the route with the node's Engine.
func (p *Plugin) Provision(ctx plugin.ProvisionContext) error {
	svc, ok := ctx.Service(ServiceName)
	engine, _ := svc.(*Engine)
	if !ok || engine == nil {
		return errors.New("reaper: no reaper engine is wired into this gateway")
	}
	if p.AppID == "" && engine.opts.GuessAppID != nil {
		p.AppID, _ = engine.opts.GuessAppID(ctx.Route)
	}
	if p.AppID == "" {
		return fmt.Errorf("%s.app_id: is required", ctx.Path)
	}
	p.engine = engine
	p.routeID = ctx.Route.ID
	p.routeName = ctx.Route.Name
	if p.routeName == "" {
		p.routeName = p.routeID
	}
	p.log = ctx.Logger
	p.readyDelay = engine.opts.ReadyDelay
	if p.ReadyDelay != nil {
		p.readyDelay = p.ReadyDelay.D()
	}
	engine.Register(p.routeID, p.routeName, &p.Config)
	p.app = engine.app(p.AppID)
	return nil
}

// Cleanup withdraws the route's claim on its app.
func (p *Plugin) Cleanup() error {
	if p.engine != nil {
		p.engine.Unregister(p.routeID, p.AppID, &p.Config)
	}
	return nil
}

// ValidateAccess classifies the request and answers it by the protocol table
// (protocol.go): requests for an awake app go through, those for a sleeping app
// are answered, held or wake it.
func (p *Plugin) ValidateAccess(ex *plugin.Exchange) (*plugin.Answer, error) {
	if ph := resumedHold(ex); ph != nil {
		// A parked request resumed: its hold has ended.
		if answer, done := p.afterHold(ex, ph.result()); done {
			return answer, nil
		}
		return p.holdThenAdmit(ex)
	}
	return p.respond(ex, p.classify(ex.Request), p.app.status())
}

// respond answers ex, a request of kind k for an app last seen in status st, by
// the protocol table: nil (and no error) lets it go to the app.
func (p *Plugin) respond(ex *plugin.Exchange, k requestKind, st Status) (*plugin.Answer, error) {
	v := answerFor(k, st, p.AllowWaitingPage, p.APIBehavior)
	switch v.reply {
	case replyForward, replyForwardQuiet:
		admit := p.admit
		if v.reply == replyForwardQuiet {
			admit = p.admitQuiet
		}
		if asleep, ok := admit(ex); !ok {
			// The app went to sleep meanwhile: answer as for a sleeping app
			// (asleep is a sleeping status, so this never forwards again).
			return p.respond(ex, k, asleep)
		}
		return nil, nil
	}
	now := time.Now()
	if v.touch {
		p.app.touch(now)
	}
	if v.wake {
		p.engine.askWake(p.app, now)
	}
	return p.answer(ex, v.reply, st)
}

// admit counts the request as traffic until it ends, unless the app went to sleep
// meanwhile: then it returns the sleeping status and false. The count is taken
// before the status is read again, and the job writes the status before it reads
// the counts, so a stop and a request never miss each other.
func (p *Plugin) admit(ex *plugin.Exchange) (Status, bool) {
	a := p.app
	end := a.begin()
	if st := a.status(); st.Asleep() {
		end()
		return st, false
	}
	ex.OnDone(end)
	return "", true
}

// admitQuiet lets a request that is not traffic (a poll, a monitor) through, as
// admit does: it keeps the app from being stopped under it while it runs, but
// does not move the idle clock.
func (p *Plugin) admitQuiet(ex *plugin.Exchange) (Status, bool) {
	a := p.app
	a.inFlight.Add(1)
	if st := a.status(); st.Asleep() {
		a.inFlight.Add(-1)
		return st, false
	}
	ex.OnDone(func() { a.inFlight.Add(-1) })
	return "", true
}

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
		res := p.wait(ex, deadline)
		if res == holdParked {
			return nil, plugin.ErrParked
		}
		if answer, done := p.afterHold(ex, res); done {
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
	if !p.engine.reserveBody(want) {
		return nil
	}
	ex.SetValue(bodyReservedKey{}, true)
	ex.OnDone(func() { p.engine.releaseBody(want) })
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
// result resumes it. Others wait here.
func (p *Plugin) wait(ex *plugin.Exchange, deadline time.Time) holdResult {
	e, a := p.engine, p.app
	if !ex.CanPark() {
		return e.hold(ex.Context(), a, p.MaxHeld, p.readyDelay, deadline)
	}
	ph := newParkedHold()
	h, res := e.startHold(a, p.MaxHeld, p.readyDelay, deadline, ph.settle)
	if h == nil {
		return res
	}
	pk := ex.Park(func() { e.cancelHold(a, h) })
	if pk == nil { // the connection could not be taken over: wait here
		return e.awaitHold(ex.Context(), a, h, ph.ch)
	}
	ex.SetValue(parkedKey{}, ph)
	ph.park(pk)
	return holdParked
}

// resumedHold returns the hold of a parked request that was resumed, once.
func resumedHold(ex *plugin.Exchange) *parkedHold {
	ph, _ := ex.Value(parkedKey{}).(*parkedHold)
	if ph != nil {
		ex.SetValue(parkedKey{}, nil)
	}
	return ph
}

// afterHold answers for a hold's result; done false means hold again (the app
// was put back to sleep between its release and now).
func (p *Plugin) afterHold(ex *plugin.Exchange, res holdResult) (answer *plugin.Answer, done bool) {
	switch res {
	case holdReleased:
		_, admitted := p.admit(ex)
		return nil, admitted
	case holdFailed:
		return p.failedAnswer(ex), true
	case holdTimedOut:
		return p.timeoutAnswer(ex, p.app.status()), true
	case holdTooMany:
		return p.tooManyAnswer(ex, p.app.status()), true
	case holdShutdown:
		return p.shutdownAnswer(ex, p.app.status()), true
	default: // holdGone: nobody to answer
		return &plugin.Answer{Status: StatusClientClosed}, true
	}
}

// StatusClientClosed is the status logged for a held request whose client went
// away before the app woke (nothing is written to the client).
const StatusClientClosed = 499

// TransformRequest keeps the reaper's request header away from the app: it is a
// hint between the waiting page and the gateway, never a credential.
func (p *Plugin) TransformRequest(_ *plugin.Exchange, out *http.Request) error {
	out.Header.Del(HeaderReaper)
	return nil
}

// TransformResponse keeps the platform's own "no instance" answer (Clever Cloud's
// 404 with X-CleverCloudUpgrade: true) from ever reaching a client as the app's
// answer: the app is not ready yet. The client gets what a sleeping app's clients
// get — the waiting page for a browser, a poll's or a monitor's answer, a 503 with
// Retry-After otherwise — and the job is asked to look at the app at once (it may
// have been stopped from outside).
func (p *Plugin) TransformResponse(ex *plugin.Exchange, resp *http.Response) error {
	nr := p.engine.opts.NotReadyYet
	if nr == nil || !nr(resp) {
		return nil
	}
	a := p.app
	// To its clients the app is not there yet, whatever its record says: they get
	// what they would get while it wakes up, except that a request that came
	// this far cannot be held any more.
	v := answerFor(p.classify(ex.Request), StatusWaitingForUp, p.AllowWaitingPage, p.APIBehavior)
	if now := time.Now(); v.wake {
		p.engine.askSoon(a, now)
	} else {
		p.engine.lookSoon(a, now) // a monitor never wakes an app
	}
	st := a.status()
	if st == StatusUp {
		st = StatusWaitingForUp // what it really is until the platform routes to it
	}
	var ans *plugin.Answer
	if v.reply == replyHold || v.reply == replyUnavailable {
		ans = p.unavailableAnswer(ex, st)
		ans.Header.Set("Retry-After", "5")
	} else {
		var err error
		if ans, err = p.answer(ex, v.reply, st); err != nil {
			return err
		}
	}
	resp.Body.Close()
	resp.StatusCode = ans.Status
	resp.Status = strconv.Itoa(ans.Status) + " " + http.StatusText(ans.Status)
	resp.Header = ans.Header.Clone()
	resp.Header.Set("Content-Length", strconv.Itoa(len(ans.Body)))
	resp.ContentLength = int64(len(ans.Body))
	resp.Body = io.NopCloser(bytes.NewReader(ans.Body))
	return nil
}

// HandleDialFailure is called when the app's backend refused the connection: the
// app may have crashed or been stopped by hand since it was last observed. The job
// is asked to look at it now; if it is indeed down, the request is handled as for
// a sleeping app (woken, then sent again once up, its body intact since the backend
// never saw it), a poll gets its status answer and a monitor its 200 — neither
// wakes anything beyond what the protocol says. If the app is still up
// (overloaded, refusing connections), the usual 502 is given at once: holding
// requests for an app that is up would let anyone pile them up. Requests waiting
// for the job's verdict count against max_held.
func (p *Plugin) HandleDialFailure(ex *plugin.Exchange, _ error) (plugin.DialAction, *plugin.Answer) {
	if ph := resumedHold(ex); ph != nil {
		// A request parked after the failure resumed: its hold has ended.
		if answer, done := p.afterHold(ex, ph.result()); done {
			return dialAction(answer, nil)
		}
		return dialAction(p.holdThenAdmit(ex))
	}
	a := p.app
	k := p.classify(ex.Request)
	if !p.engine.takeHeld(a, p.MaxHeld) {
		return plugin.DialAnswer, p.tooManyAnswer(ex, a.status())
	}
	asleep := p.engine.recheck(ex.Context(), a, k != kindMonitor)
	p.engine.dropHeld(a)
	if !asleep {
		return plugin.DialPass, nil
	}
	return dialAction(p.respond(ex, k, a.status()))
}

// dialAction says what an answer of the protocol means after a dial failure: no
// answer lets the request through, so it is sent again.
func dialAction(answer *plugin.Answer, err error) (plugin.DialAction, *plugin.Answer) {
	switch {
	case err == plugin.ErrParked:
		return plugin.DialParked, nil
	case err != nil:
		return plugin.DialPass, nil // the usual 502
	case answer != nil:
		return plugin.DialAnswer, answer
	}
	return plugin.DialRetry, nil
}

// recheck asks the job to observe the app now (with a wake ask when wake is set)
// and waits, briefly, for its record to say it sleeps. It returns whether it does.
func (e *Engine) recheck(ctx context.Context, a *app, wake bool) bool {
	if a.status().Asleep() {
		return true
	}
	ch := a.changed()
	if wake {
		e.askSoon(a, time.Now())
	} else {
		e.lookSoon(a, time.Now())
	}
	t := time.NewTimer(recheckWait)
	defer t.Stop()
	for {
		select {
		case <-ch:
			if a.status().Asleep() {
				return true
			}
			ch = a.changed()
		case <-t.C:
			return a.status().Asleep()
		case <-ctx.Done():
			return false
		}
	}
}

// recheckWait bounds how long a refused request waits for the job's verdict.
const recheckWait = 3 * time.Second

package reaper

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/conf"
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

	// The plugin reaches the engine only through its exported calls: the
	// port's claim on the app (route: what the app's status and record are, its
	// holds, its traffic, its wake asks), and the node's options and places.
	engine    *Engine
	route     *Route
	opts      EngineOptions // the engine's (Engine.Options), read once
	routeName string
	log       *slog.Logger
	pageErr   throttle // logs that a custom waiting page failed to render
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
	p.opts = engine.Options()
	if err := p.findApp(ctx, p.opts); err != nil {
		return err
	}
	p.engine = engine
	p.routeName = ctx.Route.Name
	if p.routeName == "" {
		p.routeName = ctx.Route.ID
	}
	p.log = ctx.Logger
	// Its requests are counted and held through the port, as a TCP route's
	// connections are; its kept-alive connections to the app's backends are
	// dropped when the app stops or wakes.
	p.route = engine.ClaimWith(ctx.Route.ID, p.routeName, &p.Config, ctx.DropIdleConnections)
	return nil
}

// findApp fills in the app of a route whose plugin does not name it: guessed
// from the route, else found on the platform (EngineOptions.FindApp).
func (p *Plugin) findApp(ctx plugin.ProvisionContext, opts EngineOptions) error {
	if p.AppID == "" && opts.GuessAppID != nil {
		p.AppID, _ = opts.GuessAppID(ctx.Route)
	}
	if p.AppID == "" && opts.FindApp != nil {
		parent := ctx.Context
		if parent == nil {
			parent = context.Background()
		}
		fctx, cancel := context.WithTimeout(parent, cmp.Or(opts.FindAppTimeout, 30*time.Second))
		defer cancel()
		id, err := opts.FindApp(fctx, ctx.Route)
		if err != nil {
			return conf.Error{Path: conf.Key(ctx.Path, "app_id"), Msg: "not set, and the app could not be found by the route's domains: " + err.Error()}
		}
		p.AppID = id
		if ctx.Logger != nil {
			ctx.Logger.Info("reaper: the route's app was found by its domains", "app", id)
		}
	}
	if p.AppID == "" {
		return conf.Error{Path: conf.Key(ctx.Path, "app_id"), Msg: "is required"}
	}
	return nil
}

// Cleanup withdraws the route's claim on its app.
func (p *Plugin) Cleanup() error {
	if p.route != nil {
		p.route.Release()
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
	if isWellKnown(ex) {
		if answer, ok, err := p.wellKnown(ex); ok {
			return answer, err
		}
	}
	k := p.classify(ex.Request)
	ex.Class = kindNames[k]
	return p.respond(ex, k, p.route.Status())
}

// respond answers ex, a request of kind k for an app last seen in status st, by
// the protocol table: nil (and no error) lets it go to the app.
func (p *Plugin) respond(ex *plugin.Exchange, k requestKind, st Status) (*plugin.Answer, error) {
	v := answerFor(k, st, p.AllowWaitingPage, p.APIBehavior)
	if v.reply == replyForward && p.route.Releasing() {
		// The app is up, but requests held for it are still being released at
		// its pace: this one waits its turn behind them.
		return p.holdThenAdmit(ex)
	}
	switch v.reply {
	case replyForward, replyForwardQuiet:
		if asleep, ok := p.admit(ex, v.reply == replyForwardQuiet); !ok {
			// The app went to sleep meanwhile: answer as for a sleeping app
			// (asleep is a sleeping status, so this never forwards again).
			return p.respond(ex, k, asleep)
		}
		return nil, nil
	}
	if v.wake {
		if wait, limited := p.route.AskWakeFrom(ex.ClientIP, st); limited {
			return p.tooManyWakesAnswer(ex, k, st, wait) // no wake, and no traffic
		}
	}
	if v.touch {
		p.route.Touch()
	}
	return p.answer(ex, v.reply, st)
}

// admit counts the request as traffic until it ends (Route.Admit), unless the
// app went to sleep meanwhile: then it returns the sleeping status and false.
// A quiet request (a poll, a monitor: not traffic) keeps the app from being
// stopped under it while it runs, but does not move the idle clock, nor count
// in why the app is awake.
func (p *Plugin) admit(ex *plugin.Exchange, quiet bool) (Status, bool) {
	end, st, ok := p.route.Admit(quiet)
	if !ok {
		return st, false
	}
	ex.OnDone(end)
	if !quiet {
		p.route.NoteAwake(ex.ClientIP, func() (string, string) {
			return ex.Request.URL.Path, ex.Request.Header.Get("User-Agent")
		})
	}
	return "", true
}

// TransformRequest keeps the reaper's request header away from the app: it is a
// hint between the waiting page and the gateway, never a credential.
func (p *Plugin) TransformRequest(_ *plugin.Exchange, out *http.Request) error {
	delete(out.Header, headerReaperKey)
	return nil
}

// TransformResponse keeps the platform's own "no instance" answer (Clever Cloud's
// 404 with X-CleverCloudUpgrade: true) from ever reaching a client as the app's
// answer: the app is not ready yet. The client gets what a sleeping app's clients
// get — the waiting page for a browser, a poll's or a monitor's answer, a 503 with
// Retry-After otherwise — and the job is asked to look at the app at once (it may
// have been stopped from outside).
func (p *Plugin) TransformResponse(ex *plugin.Exchange, resp *http.Response) error {
	nr := p.opts.NotReadyYet
	notReady := nr != nil && nr(resp)
	// A released request: its answer begins.
	answered := !notReady && resp.StatusCode < http.StatusInternalServerError
	if rp := p.giveBackPlace(ex, answered); rp != nil {
		if rp.closeAfter {
			resp.Header.Set("Connection", "close")
		}
		if answered {
			p.route.Answered()
			if st := serverTiming(p.route.Record(), time.Now()); st != "" {
				resp.Header.Add("Server-Timing", st)
			}
		}
	}
	if !notReady {
		return nil
	}
	// To its clients the app is not there yet, whatever its record says: they get
	// what they would get while it wakes up, except that a request that came
	// this far cannot be held any more.
	v := answerFor(p.classify(ex.Request), StatusWaitingForUp, p.AllowWaitingPage, p.APIBehavior)
	p.route.LookSoon(v.wake) // a monitor never wakes an app
	st := p.route.Status()
	if st == StatusUp {
		st = StatusWaitingForUp // what it really is until the platform routes to it
	}
	var ans *plugin.Answer
	if v.reply == replyHold || v.reply == replyUnavailable {
		ex.Outcome = OutcomeUnavailable
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
// requests for an app that is up would let anyone pile them up. An app in Error
// is not running: its requests get the 503 "could not be started" at once (the
// job leaves an app in Error alone, so no verdict would come). Requests waiting
// for the job's verdict count against max_held.
func (p *Plugin) HandleDialFailure(ex *plugin.Exchange, _ error) (plugin.DialAction, *plugin.Answer) {
	if ph := resumedHold(ex); ph != nil {
		// A request parked after the failure resumed: its hold has ended.
		if answer, done := p.afterHold(ex, ph.result()); done {
			return dialAction(answer, nil)
		}
		return dialAction(p.holdThenAdmit(ex))
	}
	r := p.route
	if ex.Value(resendKey{}) != nil && r.Status() == StatusUp && !time.Now().Add(resendMaxWait).Before(ex.Start.Add(p.FailTimeout.D())) {
		// Released from a hold, and sent again until its fail timeout
		// (resend.go): looking at the app again would only take it past it.
		return plugin.DialPass, nil
	}
	k := p.classify(ex.Request)
	if r.Status() == StatusError {
		// Not running, and the job leaves an app in Error alone until an
		// operator resets it: say that it could not be started, rather than
		// a 502 from its dead backend after waiting for a verdict that cannot
		// come.
		return dialAction(p.errorAnswer(ex, k))
	}
	asleep, err := r.Recheck(ex.Context(), k != kindMonitor)
	if err != nil { // ErrTooManyHeld
		return plugin.DialAnswer, p.tooManyAnswer(ex, r.Status())
	}
	if !asleep {
		return plugin.DialPass, nil
	}
	return dialAction(p.respond(ex, k, r.Status()))
}

// errorAnswer answers a request of kind k for an app in Error that cannot be
// reached: the waiting page, which says so, for a browser the route gives it to;
// the 503 "could not be started", with its cause, otherwise.
func (p *Plugin) errorAnswer(ex *plugin.Exchange, k requestKind) (*plugin.Answer, error) {
	ex.Outcome = OutcomeError
	if k == kindBrowser && p.AllowWaitingPage {
		return p.waitingPage(ex, StatusError)
	}
	return p.failedAnswer(ex, nil), nil
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

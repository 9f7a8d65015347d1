package reaper

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/page"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/ratelimit"
)

// WellKnownPreviewPath shows the route's waiting page (built-in or custom) as
// a browser would get it, for any status and language:
// ?status=WaitingForShutdown|Down|WaitingForUp|Up|Error (default Down) and
// ?lang=<tag> (default: the browser's Accept-Language). It wakes nothing, is no
// traffic, and the page it shows neither polls nor reloads. It asks for the
// node's admin token (Authorization: Bearer), unless the route sets
// allow_preview.
const WellKnownPreviewPath = "/.well-known/reaper/preview"

// previewStatuses are the statuses a preview shows the page in.
var previewStatuses = []Status{StatusWaitingForShutdown, StatusDown, StatusWaitingForUp, StatusUp, StatusError}

func (p *Plugin) preview(ex *plugin.Exchange) (*plugin.Answer, error) {
	ex.Class, ex.Outcome = kindNames[kindStatus], OutcomePreview
	if a := onlyGet(ex, WellKnownPreviewPath); a != nil {
		return a, nil
	}
	r := ex.Request
	if !p.AllowPreview {
		if a := p.previewDoor(ex); a != nil {
			return a, nil
		}
	}
	q := r.URL.Query()
	st := StatusDown
	if s := q.Get("status"); s != "" {
		st = Status(s)
	}
	if !previewable(st) {
		return plugin.JSONAnswer(http.StatusBadRequest, map[string]any{
			"error": "status must be one of WaitingForShutdown, Down, WaitingForUp, Up, Error"}), nil
	}
	lang := q.Get("lang")
	if lang == "" {
		lang = r.Header.Get("Accept-Language")
	}
	w := p.waiting(ex, st)
	w.Preview = true
	w.Progress = p.previewProgress(st)
	body, err := p.renderPage(ex, w, lang)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Robots-Tag", "noindex")
	h.Set(HeaderStatus, p.route.Status().Marker())
	return &plugin.Answer{Status: http.StatusOK, Header: h, Body: body}, nil
}

func previewable(st Status) bool {
	for _, s := range previewStatuses {
		if st == s {
			return true
		}
	}
	return false
}

// previewProgress is a wake in status st as far as it goes there, against the
// app's usual boot time (or, before one was measured, against none): halfway
// through while it starts, up once up.
func (p *Plugin) previewProgress(st Status) page.Progress {
	var pr page.Progress
	pr.ETA, pr.Samples = p.route.ETA()
	boot := pr.ETA
	if boot <= 0 {
		boot = 10 * time.Second
	}
	switch st {
	case StatusWaitingForUp, StatusError:
		pr.Asked, pr.Waited, pr.Accepted = true, boot/2, 100*time.Millisecond
	case StatusUp:
		pr.Asked, pr.Waited, pr.Accepted, pr.Up = true, boot, 100*time.Millisecond, boot
	}
	return pr
}

// doorPreview names the preview in the log of failed attempts at the token.
const doorPreview = "waiting page preview"

// previewDoor checks the admin token of a preview: nil when it is right. A
// wrong one counts against the client's budget of failures, which the admin
// listener's doors share (EngineOptions.Failures); a client out of budget
// gets 429 and Retry-After whatever it sends.
func (p *Plugin) previewDoor(ex *plugin.Exchange) *plugin.Answer {
	now, client, failures := time.Now(), ratelimit.Key(ex.ClientIP), p.opts.Failures
	if wait, limited := failures.Limited(client, doorPreview, now); limited {
		a := plugin.JSONAnswer(http.StatusTooManyRequests, map[string]any{
			"error": "too many failed attempts at the admin token from your address; try again later"})
		a.Header.Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		return a
	}
	if adminBearer(p.opts.AdminToken, ex.Request.Header.Get("Authorization")) {
		return nil
	}
	failures.Failed(client, doorPreview, now)
	a := plugin.JSONAnswer(http.StatusUnauthorized, map[string]any{
		"error": "the preview asks for the node's admin token (Authorization: Bearer <node.admin_token>), or allow_preview on the route"})
	a.Header.Set("WWW-Authenticate", `Bearer realm="reaper"`)
	return a
}

// adminBearer reports whether an Authorization header value carries the
// node's admin token; never when the node has none.
func adminBearer(token conf.Secret, authorization string) bool {
	if !token.IsSet() {
		return false
	}
	want := "Bearer " + token.Reveal()
	return subtle.ConstantTimeCompare([]byte(authorization), []byte(want)) == 1
}

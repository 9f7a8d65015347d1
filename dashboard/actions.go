package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/reaper"
)

// The dashboard's actions are forms posted to /apps/{id}/{action} and
// /settings. Each is confirmed first: without the script, a form without
// confirm=yes gets a page that asks, whose button posts it again with
// confirm=yes; the script asks in a dialog and posts with confirm=yes itself,
// asking for a JSON answer. A done action redirects to the page it came from,
// which shows the outcome once (a signed flash cookie).

// actionResult is the JSON answer of an action to the script.
type actionResult struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// confirmView is the page that asks before an action.
type confirmView struct {
	Question string
	Detail   string
	Action   string            // the form's URL
	Fields   map[string]string // posted again with confirm=yes
	Back     string
	Danger   bool
}

// appAction serves POST /apps/{id}/{action}.
func (d *Dashboard) appAction(w http.ResponseWriter, r *http.Request, s session) {
	if !d.checkCSRF(w, r, s) {
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	form := r.PostForm
	q, detail, ok := askFor(action, id, form)
	if !ok {
		d.refuse(w, r, s, http.StatusNotFound, "There is no action "+fmt.Sprintf("%q", action)+".")
		return
	}
	back := "/apps/" + url.PathEscape(id)
	if form.Get("back") == "/" { // a group's action, from the apps page (only "/": no open redirect)
		back = "/"
	}
	if form.Get("confirm") != "yes" {
		d.confirm(w, r, s, confirmView{Question: q, Detail: detail, Action: r.URL.Path, Back: back,
			Fields: keep(form, "force", "duration", "reason", "back"), Danger: action == "sleep" || action == "reset"})
		return
	}
	msg, err := d.doAction(r.Context(), action, id, form, who(s))
	d.done(w, r, back, msg, err)
}

// askFor is the question and its detail before an action, ok false for an
// unknown action.
func askFor(action, id string, form url.Values) (question, detail string, ok bool) {
	switch action {
	case "wake":
		return "Wake " + id + " now?", "It starts as if a request had come for it.", true
	case "sleep":
		if form.Get("force") != "" {
			return "Put " + id + " to sleep now, even if held, in Error or stuck?", "Its hold and keep-up range are overridden, and an app in Error or stuck waking is stopped; requests still open are never cut: it stops once they end.", true
		}
		return "Put " + id + " to sleep now?", "It stops once no request is open, and wakes again on the next one.", true
	case "hold":
		return "Keep " + id + " awake for " + form.Get("duration") + "?", "It is woken now if it sleeps, and is not put to sleep before the hold ends.", true
	case "release":
		return "Release the hold on " + id + "?", "Its idle clock counts from now.", true
	case "reset":
		return "Reset " + id + "?", "It goes back to WaitingForInit, and reaper looks at it at once.", true
	}
	return "", "", false
}

// doAction calls the admin API for the action and says what happened.
func (d *Dashboard) doAction(ctx context.Context, action, id string, form url.Values, by string) (string, error) {
	req := reaper.ActionRequest{By: by}
	var raw []byte // a group's id is answered member by member (groups.go)
	ctx = adminapi.WithRaw(ctx, &raw)
	isGroup := func() bool { return isGroupAnswer(raw) }
	switch action {
	case "wake":
		res, err := d.api.Wake(ctx, id, req)
		if isGroup() { // a group's id: the answer is each member's
			return "Wake asked for every app of " + id + ".", err
		}
		return "Wake asked for " + id + " (it was " + string(res.Status) + ").", err
	case "sleep":
		res, err := d.api.Sleep(ctx, id, form.Get("force") != "", req)
		if isGroup() {
			return "The apps of " + id + " go to sleep, in the reverse order.", err
		}
		if res.Open > 0 {
			return fmt.Sprintf("%s goes to sleep once %d open requests or connections end.", id, res.Open), err
		}
		return id + " goes to sleep now.", err
	case "hold":
		req.Duration, req.Reason = strings.TrimSpace(form.Get("duration")), strings.TrimSpace(form.Get("reason"))
		res, err := d.api.Hold(ctx, id, req)
		if err == nil && isGroup() {
			return "Every app of " + id + " is held awake for " + req.Duration + ".", nil
		}
		if err != nil || res.Hold == nil {
			return "", err
		}
		return id + " is held awake until " + stamp(res.Hold.Until) + ".", nil
	case "release":
		res, err := d.api.Release(ctx, id, req)
		if err == nil && isGroup() {
			return "The holds on the apps of " + id + " are released.", err
		}
		if !res.Released {
			return id + " had no active hold.", err
		}
		return "The hold on " + id + " is released.", err
	default: // reset
		_, err := d.api.Reset(ctx, id, req)
		return id + " is back to WaitingForInit.", err
	}
}

// settingsAction serves POST /settings: setting (dry_run or kill_switch) and
// value (on or off).
func (d *Dashboard) settingsAction(w http.ResponseWriter, r *http.Request, s session) {
	if !d.checkCSRF(w, r, s) {
		return
	}
	form := r.PostForm
	name, on := form.Get("setting"), form.Get("value") == "on"
	label := map[string]string{"dry_run": "dry run", "kill_switch": "the kill switch"}[name]
	if label == "" {
		d.refuse(w, r, s, http.StatusBadRequest, "There is no such setting.")
		return
	}
	state := map[bool]string{true: "on", false: "off"}[on]
	if form.Get("confirm") != "yes" {
		detail := "It applies to every app, on every node of the cluster."
		d.confirm(w, r, s, confirmView{Question: "Turn " + label + " " + state + "?", Detail: detail, Action: "/settings",
			Fields: keep(form, "setting", "value"), Back: "/", Danger: on})
		return
	}
	ctx := r.Context()
	cur, err := d.api.Settings(ctx)
	if err == nil {
		if name == "dry_run" {
			cur.DryRun = on
		} else {
			cur.KillSwitch = on
		}
		_, err = d.api.PutSettings(ctx, cur)
	}
	d.log.Info("dashboard: settings changed", "setting", name, "on", on, "by", who(s), "ok", err == nil)
	d.done(w, r, "/", strings.ToUpper(label[:1])+label[1:]+" is now "+state+".", err)
}

// confirm answers an action that is not confirmed yet: the page that asks.
func (d *Dashboard) confirm(w http.ResponseWriter, r *http.Request, s session, v confirmView) {
	if wantsJSON(r) {
		httpjson.Write(w, http.StatusBadRequest, actionResult{Error: "confirm=yes is required"})
		return
	}
	d.render(w, r, http.StatusOK, confirmPage(d.frame(s, "Confirm"), v))
}

// done answers a done (or refused) action: JSON for the script, else the page
// it came from, with the outcome shown once.
func (d *Dashboard) done(w http.ResponseWriter, r *http.Request, back, msg string, err error) {
	res, code := actionResult{OK: true, Message: msg}, http.StatusOK
	if err != nil {
		res, code = actionResult{Error: errText(err)}, http.StatusBadGateway
		if status := adminapi.StatusOf(err); status != 0 {
			code = status
		}
	}
	if wantsJSON(r) {
		httpjson.Write(w, code, res)
		return
	}
	if err != nil {
		d.setFlash(w, r, flash{Kind: "error", Msg: res.Error})
	} else {
		d.setFlash(w, r, flash{Kind: "ok", Msg: msg})
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// keep copies the named fields of a form that are set.
func keep(form url.Values, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		if v := form.Get(n); v != "" {
			out[n] = v
		}
	}
	return out
}

// who is the "by" of the session's actions in the history.
func who(s session) string {
	if s.Name != "" {
		return s.Name + " (dashboard)"
	}
	return "dashboard"
}

// flash is the outcome of an action, shown once on the next page.
type flash struct {
	Kind string // ok or error
	Msg  string
}

const maxFlash = 600

func (d *Dashboard) setFlash(w http.ResponseWriter, r *http.Request, f flash) {
	if m := []rune(f.Msg); len(m) > maxFlash {
		f.Msg = string(m[:maxFlash]) + "…"
	}
	http.SetCookie(w, cookie(r, flashCookie, d.keys.sign("flash", f.Kind+"|"+f.Msg), flashTTL))
}

// takeFlash returns the outcome to show, if any, and removes it.
func (d *Dashboard) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, cookie(r, flashCookie, "", 0))
	msg, ok := d.keys.open("flash", c.Value)
	if !ok {
		return nil
	}
	kind, text, _ := strings.Cut(msg, "|")
	return &flash{Kind: kind, Msg: text}
}

package reaper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
)

// The operator's actions on an app: wake, sleep now, hold awake, release, reset.
// Each one that changes the record does so under the app's lock (an operator's:
// term 0, never taken over), keeping the record's term, and each one goes to the
// app's history with who did it. In a cluster the binary forwards them to the
// leader, so they meet the job where it decides.

// Bounds of a hold.
const (
	MinHold = time.Minute
	MaxHold = 90 * 24 * time.Hour
)

// readAction decodes an action's body (empty is fine); an error says what is
// wrong with it. ?by= stands in for the body's by.
func readAction(w http.ResponseWriter, r *http.Request) (ActionRequest, error) {
	var b ActionRequest
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err != nil {
		return b, errors.New("the body is larger than 4 KiB")
	}
	if strings.TrimSpace(string(raw)) != "" {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return b, fmt.Errorf(`the body must be a JSON object {"by": "…", "reason": "…", "duration": "6h"}: %v`, err)
		}
	}
	if b.By == "" {
		b.By = r.URL.Query().Get("by")
	}
	b.By = operatorName(b.By)
	if len([]rune(b.Reason)) > 200 {
		return b, errors.New("reason: at most 200 characters")
	}
	return b, nil
}

// refusal is an action the app's state refuses, with the status to answer.
type refusal struct {
	code int
	msg  string
}

func (r *refusal) Error() string { return r.msg }

// change applies f to the app's record for an operator, through the port
// (Engine.Change: under the app's lock, committed with the action that told
// makes of it, then the job asked to look), and answers the client itself on
// failure: f's refusal, the lock taken, the store down. It reports whether the
// change was written, with the new record.
func (a *AdminAPI) change(w http.ResponseWriter, r *http.Request, id string, f func(rec *Record, now time.Time) *refusal,
	told func(next Record) Transition) (Record, bool) {
	next, err := a.Engine.Change(r.Context(), id, func(rec *Record, now time.Time) error {
		if no := f(rec, now); no != nil {
			return no
		}
		return nil
	}, told)
	var no *refusal
	var failed *ChangeError
	switch {
	case err == nil:
		return next, true
	case errors.As(err, &no):
		httpjson.Error(w, no.code, no.msg)
	case errors.Is(err, ErrLocked):
		httpjson.Error(w, http.StatusConflict, "the app is being decided on right now; try again")
	case errors.As(err, &failed) && failed.Step == "read":
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+failed.Err.Error())
	case errors.As(err, &failed) && failed.Step == "write":
		httpjson.Error(w, http.StatusServiceUnavailable, "the record cannot be written: "+failed.Err.Error())
	case errors.As(err, &failed):
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be used: "+failed.Err.Error())
	default:
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be used: "+err.Error())
	}
	return Record{}, false
}

// managed returns the app's merged policy, ok false (and a 404 written) when no
// route manages it.
func (a *AdminAPI) managed(w http.ResponseWriter, id string) (ManagedApp, bool) {
	for _, m := range a.Engine.Managed() {
		if m.App.ID == id {
			return m, true
		}
	}
	httpjson.Error(w, http.StatusNotFound, "no route manages an app "+strconv.Quote(id))
	return ManagedApp{}, false
}

func (a *AdminAPI) wake(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := a.managed(w, id); !ok {
		return
	}
	body, err := readAction(w, r)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	rec, _ := a.Engine.Record(id)
	// In the history before the ask: the job must not take it for a visit, and
	// it comes before what the job does about it.
	a.Engine.TellAction(r.Context(), Transition{AppID: id, From: rec.Status, To: rec.Status, At: time.Now(), Kind: EventWakeAsk, By: body.By, Cause: "wake asked"})
	a.Engine.AskWakeNow(id)
	httpjson.Write(w, http.StatusAccepted, WakeAnswer{AppID: id, Asked: true, Status: rec.Status})
}

// sleep is "put to sleep now" (the reference's _reap): refused with 409 and the
// reason when the app cannot go now, unless ?force=true, which still never cuts
// a request in flight (the job waits until none is).
func (a *AdminAPI) sleep(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m, ok := a.managed(w, id)
	if !ok {
		return
	}
	body, err := readAction(w, r)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	force := false
	if s := r.URL.Query().Get("force"); s != "" {
		if force, err = strconv.ParseBool(s); err != nil {
			httpjson.Error(w, http.StatusBadRequest, "force must be true or false, not "+strconv.Quote(s))
			return
		}
	}
	settings, err := a.Store.Settings(r.Context())
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	busy, err := a.busy(r.Context(), id)
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	cause := "put to sleep now"
	if force {
		cause += " (forced)"
	}
	if busy > 0 {
		cause += fmt.Sprintf(", once %d open requests or connections end", busy)
	}
	rec, done := a.change(w, r, id, func(rec *Record, now time.Time) *refusal {
		if no := sleepRefusal(*rec, settings, m.Policy, busy, force, now); no != nil {
			return no
		}
		rec.SleepAsk = &SleepAsk{At: now, By: body.By, Force: force}
		if rec.Status != StatusUp {
			rec.SleepAsk.From = rec.Status // a forced stop of an app in Error or stuck waking
		}
		if force && rec.Hold.Active(now) {
			h := *rec.Hold
			h.Until, h.ReleasedBy = now, body.By
			rec.Hold = &h
		}
		return nil
	}, func(rec Record) Transition {
		return Transition{AppID: id, From: rec.Status, To: rec.Status, At: rec.SleepAsk.At, Kind: EventSleep, By: body.By, Cause: cause}
	})
	if !done {
		return
	}
	httpjson.Write(w, http.StatusAccepted, SleepAnswer{AppID: id, Status: rec.Status, SleepAsked: rec.SleepAsk, Open: busy})
}

// sleepRefusal says why an app cannot be put to sleep now, nil when it can. It
// is pure: rec, the settings, the app's policy, its open requests and
// connections (busy, over every node) and force decide.
func sleepRefusal(rec Record, s Settings, p Policy, busy int, force bool, now time.Time) *refusal {
	conflict := func(msg string) *refusal { return &refusal{http.StatusConflict, msg} }
	switch {
	case s.KillSwitch:
		return conflict("the kill switch is on: no app is put to sleep")
	case s.DryRun:
		return conflict("dry run is on: no app is put to sleep")
	}
	switch rec.Status {
	case StatusUp:
	case StatusError, StatusWaitingForUp:
		// Nothing else can stop an app in Error (reaper keeps its hands off
		// it) or stuck waking: a forced sleep does.
		if force {
			return nil
		}
		if rec.Status == StatusWaitingForUp {
			return conflict("the app is waking up; put it to sleep once it is Up, or ?force=true stops it now")
		}
		return conflict("the app is in Error (" + rec.ErrorCause + "): reset it, or ?force=true stops it")
	case StatusWaitingForInit:
		return conflict("the app has not been observed yet; try again in a few seconds")
	default:
		return conflict("the app is already " + string(rec.Status))
	}
	if force {
		return nil
	}
	switch {
	case busy > 0:
		return conflict(fmt.Sprintf("%d requests, connections or held requests are open on the app; ?force=true puts it to sleep once they end", busy))
	case p.KeepUp(now):
		return conflict("the app is inside a keep-up range (must_be_up_at); ?force=true puts it to sleep anyway")
	case rec.Hold.Active(now):
		h := rec.Hold
		return conflict(fmt.Sprintf("the app is held awake until %s by %s (%s); release the hold, or ?force=true ends it",
			h.Until.UTC().Format(time.RFC3339), h.By, h.Reason))
	}
	return nil
}

// busy is the app's open requests, connections and held requests over every
// node: this node's exact count, and the others' as of their last flush.
func (a *AdminAPI) busy(ctx context.Context, id string) (int, error) {
	counts, err := a.Engine.OpenEverywhere(ctx)
	if err != nil {
		return 0, err
	}
	return counts[id], nil
}

// hold keeps the app awake for a duration, waking it if it sleeps.
func (a *AdminAPI) hold(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := a.managed(w, id); !ok {
		return
	}
	body, err := readAction(w, r)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	d, err := parseHoldDuration(body.Duration)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	rec, done := a.change(w, r, id, func(rec *Record, now time.Time) *refusal {
		rec.Hold = &KeepWarm{Until: now.Add(d), Reason: body.Reason, By: body.By, Since: now}
		return nil
	}, func(rec Record) Transition {
		return Transition{AppID: id, From: rec.Status, To: rec.Status, At: rec.Hold.Since, Kind: EventHold,
			By: body.By, Cause: body.Reason, Hold: rec.Hold}
	})
	if !done {
		return
	}
	httpjson.Write(w, http.StatusOK, HoldAnswer{AppID: id, Status: rec.Status, Hold: rec.Hold})
}

// parseHoldDuration reads a hold's duration: a Go duration ("6h", "90m") or a
// number of days ("2d"), from MinHold to MaxHold.
func parseHoldDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New(`duration is required: how long to hold the app awake, e.g. "6h", "90m" or "2d"`)
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("duration %q: not a duration (e.g. \"6h\", \"90m\" or \"2d\")", s)
	case d < MinHold || d > MaxHold:
		return 0, fmt.Errorf("duration %q: must be from %v to %d days", s, MinHold, MaxHold/(24*time.Hour))
	}
	return d, nil
}

// release ends the app's hold now; the idle clock counts from now. Releasing an
// app with no active hold is not an error ("released": false).
func (a *AdminAPI) release(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := a.managed(w, id); !ok {
		return
	}
	body, err := readAction(w, r)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if rec, ok := a.Engine.Record(id); !ok || !rec.Hold.Active(time.Now()) {
		httpjson.Write(w, http.StatusOK, ReleaseAnswer{AppID: id, Released: false, Reason: "the app has no active hold"})
		return
	}
	rec, done := a.change(w, r, id, func(rec *Record, now time.Time) *refusal {
		if !rec.Hold.Active(now) {
			return nil // expired meanwhile: nothing to change
		}
		h := *rec.Hold
		h.Until, h.ReleasedBy = now, body.By
		rec.Hold = &h
		return nil
	}, func(rec Record) Transition {
		return Transition{AppID: id, From: rec.Status, To: rec.Status, At: rec.Hold.Until, Kind: EventRelease,
			By: body.By, Cause: "hold released", Hold: rec.Hold}
	})
	if !done {
		return
	}
	httpjson.Write(w, http.StatusOK, ReleaseAnswer{AppID: id, Released: true, Status: rec.Status, Hold: rec.Hold})
}

// reset puts the app back in WaitingForInit, keeping the record's term (an
// operator's reset is no leader's decision), and asks the job to look.
func (a *AdminAPI) reset(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := readAction(w, r)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok, err := a.Store.Record(r.Context(), id); err != nil || !ok {
		if err != nil {
			httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		} else {
			httpjson.Error(w, http.StatusNotFound, "no record for app "+strconv.Quote(id))
		}
		return
	}
	rec, done := a.change(w, r, id, func(rec *Record, now time.Time) *refusal {
		*rec = Reset(*rec, now)
		rec.Cause = CauseReset + " (" + body.By + ")"
		return nil
	}, nil)
	if done {
		httpjson.Write(w, http.StatusOK, ResetAnswer{AppID: id, Status: rec.Status})
	}
}

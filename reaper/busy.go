package reaper

import (
	"fmt"
	"net/url"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
)

// A worker that pulls jobs from a queue gets no requests: its idle clock says
// nothing of whether it is in the middle of a job. Its busy_url says: before the
// job puts an idle app with one to sleep, it asks the URL (busyprobe.go), and
// busyVerdict, pure, decides from the last answer whether the sleep goes ahead.

// Busy answers of a busy_url.
const (
	busyUnknown = iota // never asked, or not since the app needed it
	busyYes            // 200: a job is running
	busyIdle           // 204 or 404: nothing running
	busyFailed         // no answer, a timeout, any other status
)

// DefaultBusyMax is how long a busy_url that fails keeps its app awake, when
// the route does not say.
const DefaultBusyMax = time.Hour

// busyFresh is how old an answer may be and still decide a sleep (or a full
// pass, when passes are closer): the job asks again when it is older, so each
// pass that would put the app to sleep asks once.
const busyFresh = 10 * time.Second

// BusyAnswers are the last answers of an app's busy_url, as the prober keeps
// them.
type BusyAnswers struct {
	// Last is the last answer (busyUnknown: none), At when it came, Detail what
	// it was ("answered 200", "timed out after 3s").
	Last   int
	At     time.Time
	Detail string
	// FailingSince is the first failure of the failures in a row that end with
	// Last; zero when Last is not a failure.
	FailingSince time.Time
}

// BusyNote says, in an app's record, that its sleep is postponed because its
// busy_url says it is busy (or fails): the dashboard's "why is it awake?".
type BusyNote struct {
	// Since is when the sleep was first postponed, of the postponements in a
	// row.
	Since time.Time `json:"since"`
	// Why says it in words: "busy: its busy_url answered 200".
	Why string `json:"why"`
}

// busyVerdict decides whether an idle app with a busy_url may sleep now, from
// the URL's last answers: postpone true keeps it up, for why; ask true means
// the answer is missing or stale and the URL must be asked (the app is then
// postponed until the answer comes). A failing URL keeps the app up for at
// most busyMax from its first failure. An answer older than fresh is stale.
// Pure.
func busyVerdict(a BusyAnswers, now time.Time, fresh, busyMax time.Duration) (postpone, ask bool, why string) {
	if a.Last == busyUnknown || now.Sub(a.At) > fresh || a.At.After(now.Add(fresh)) {
		return true, true, "asking its busy_url whether it is busy"
	}
	switch a.Last {
	case busyYes:
		return true, false, "busy: its busy_url " + a.Detail
	case busyIdle:
		return false, false, "idle: its busy_url " + a.Detail
	}
	if failing := now.Sub(a.FailingSince); failing < busyMax {
		return true, false, fmt.Sprintf("busy for at most %s more: its busy_url fails (%s) since %s",
			(busyMax - failing).Round(time.Second), a.Detail, a.FailingSince.UTC().Format(time.RFC3339))
	}
	return false, false, fmt.Sprintf("its busy_url fails (%s) for longer than busy_max (%s)", a.Detail, busyMax)
}

// busyPostponed is the record of an app whose sleep busy_url postponed: the
// record as it was (with this look's time), noting why.
func busyPostponed(rec, next Record, why string, now time.Time) Record {
	kept := withheld(rec, next)
	since := now
	if rec.Busy != nil {
		since = rec.Busy.Since
	}
	kept.Busy = &BusyNote{Since: since, Why: why}
	return kept
}

// checkBusy checks busy_url (an http or https URL) and busy_max, as the
// drivers check an app's own (paas.CheckBusyURL).
func (c *Config) checkBusy(path string, errs *conf.Errors) {
	if c.BusyURL != "" {
		if p := paas.CheckBusyURL(c.BusyURL); p != "" {
			errs.Add(conf.Key(path, "busy_url"), "%s", p)
		}
	}
	if p := paas.CheckBusyMax(c.BusyMax.D()); p != "" {
		errs.Add(conf.Key(path, "busy_max"), "%s", p)
	}
}

// minNonEmpty returns the smaller of a and b that is not empty.
func minNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a < b:
		return a
	}
	return b
}

// redactURL is u as logs and answers may show it: scheme, host and path, no
// query (it may hold a token).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a bad URL)"
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

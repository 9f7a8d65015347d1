package page

import (
	"math"
	"strconv"
	"time"
)

// Progress is how far the wake of an app went, and how long its boots usually take: the waiting page shows
// it (the phases reached with their times, "usually ready in about N s" and a bar against it), and the
// app's live progress stream sends it again at every change (AppendEvent).
type Progress struct {
	// Asked says the time of the wake's ask is known; Waited is the time since then. While the app still
	// goes to sleep, or before the job took the ask up, it is not known yet.
	Asked  bool
	Waited time.Duration
	// Accepted and Up are when, counted from the ask, the platform accepted the start and reported the
	// app up (for local processes, once its readiness probe passed); 0: not yet.
	Accepted, Up time.Duration
	// Ready is when, counted from the ask, requests began to go through to the app (up, and the route's
	// ready_delay passed); 0: not yet.
	Ready time.Duration
	// ETA is how long the app's boots usually take (the median of its last ones); 0 until one was
	// measured. Samples is how many boots it rests on.
	ETA     time.Duration
	Samples int
}

// Phases of a wake as the page and its event stream name them (the data-phase attribute of the page's
// list, the keys of an event's times).
const (
	PhaseAsked    = "asked"
	PhaseAccepted = "accepted"
	PhaseUp       = "up"
	PhaseReady    = "ready"
)

// Events of the live progress stream (see AppendEvent).
const (
	// EventState carries the app's status, the page's state and the wake's progress; sent at once and at
	// every change.
	EventState = "state"
	// EventReady is the last event: requests for the app go through now, the page opens it.
	EventReady = "ready"
)

// StateReady is the state of an event that says the app is ready: requests go through to it now.
const StateReady = "ready"

// ETASeconds is the usual boot time in whole seconds, rounded up (0 when none is known).
func (p Progress) ETASeconds() int {
	if p.ETA <= 0 {
		return 0
	}
	return int(math.Ceil(p.ETA.Seconds()))
}

// Late reports whether the wake runs longer than the app's boots usually take.
func (p Progress) Late() bool { return p.ETA > 0 && p.Asked && p.Waited > p.ETA }

// Percent is how far the wake went against the usual boot time, from 0 to 100 (100 when late, 0 when no
// boot time is known or the ask is not known yet).
func (p Progress) Percent() int {
	switch {
	case p.ETA <= 0 || !p.Asked:
		return 0
	case p.Waited >= p.ETA:
		return 100
	}
	return int(100 * p.Waited / p.ETA)
}

// phaseTime is the time of a phase (counted from the ask), formatted with the locale's seconds, or ""
// when it was not reached or its time is not known.
func (p Progress) phaseTime(phase string, l Locale) string {
	var d time.Duration
	switch phase {
	case PhaseAsked:
		if !p.Asked {
			return ""
		}
	case PhaseAccepted:
		d = p.Accepted
	case PhaseUp:
		d = p.Up
	case PhaseReady:
		d = p.Ready
	}
	if d == 0 && phase != PhaseAsked {
		return ""
	}
	return fill(l.Messages.Seconds, PlaceholderSeconds, strconv.FormatFloat(d.Seconds(), 'f', 1, 64))
}

// reached reports whether the wake reached the phase. The ask is always reached: the request that got
// the page asked for the wake.
func (p Progress) reached(phase string) bool {
	switch phase {
	case PhaseAccepted:
		return p.Accepted > 0 || p.Up > 0
	case PhaseUp:
		return p.Up > 0
	case PhaseReady:
		return p.Ready > 0
	}
	return true
}

// AppendEvent appends one server-sent event of the live progress stream to buf: the event's name
// (EventState or EventReady), then its data, one line of JSON with the app's status, the page's state
// (StateWaiting, StateAlmost, StateError or StateReady), the times of the phases reached counted from
// the ask (asked_ms, accepted_ms, up_ms, ready_ms), the time waited since the ask (waited_ms), and the
// usual boot time (eta_ms, samples). It allocates only when buf must grow.
func AppendEvent(buf []byte, event, status, state string, p Progress) []byte {
	buf = append(buf, "event: "...)
	buf = append(buf, event...)
	buf = append(buf, "\ndata: "...)
	return append(appendProgressJSON(buf, status, state, p), "\n\n"...)
}

// appendProgressJSON appends the JSON of an event's data. status and state are reaper's own constants,
// never text from a request: they are written as they are, quoted.
func appendProgressJSON(buf []byte, status, state string, p Progress) []byte {
	buf = append(buf, `{"status":`...)
	buf = strconv.AppendQuote(buf, status)
	buf = append(buf, `,"state":`...)
	buf = strconv.AppendQuote(buf, state)
	ms := func(name string, d time.Duration) {
		buf = append(buf, `,"`...)
		buf = append(buf, name...)
		buf = append(buf, `":`...)
		buf = strconv.AppendInt(buf, d.Milliseconds(), 10)
	}
	if p.Asked {
		ms("asked_ms", 0)
		ms("waited_ms", p.Waited)
	}
	for _, ph := range [...]struct {
		name string
		d    time.Duration
	}{{"accepted_ms", p.Accepted}, {"up_ms", p.Up}, {"ready_ms", p.Ready}} {
		if ph.d > 0 {
			ms(ph.name, ph.d)
		}
	}
	if p.ETA > 0 {
		ms("eta_ms", p.ETA)
		buf = append(buf, `,"samples":`...)
		buf = strconv.AppendInt(buf, int64(p.Samples), 10)
	}
	return append(buf, '}')
}

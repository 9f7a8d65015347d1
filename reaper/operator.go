package reaper

import (
	"strings"
	"time"
)

// What an operator asks of an app beyond the idle clock (keep it warm, put it to
// sleep now), and the times of a wake, as the record keeps them.

// KeepWarm is an operator's hold: the app stays awake until Until, for Reason,
// asked by By at Since.
type KeepWarm struct {
	Until  time.Time `json:"until"`
	Reason string    `json:"reason,omitempty"`
	By     string    `json:"by,omitempty"`
	Since  time.Time `json:"since"`
	// ReleasedBy is who ended the hold before its time (Until then says when).
	ReleasedBy string `json:"released_by,omitempty"`
}

// Active reports whether the hold keeps the app awake at now.
func (h *KeepWarm) Active(now time.Time) bool { return h != nil && now.Before(h.Until) }

// SleepAsk is an operator's "put to sleep now". It is pending while the app is
// the same Up it was asked in (At not before LastUpAt): the next look puts the
// app to sleep as soon as nothing is in flight, even if it is not idle yet. With
// Force, keep-up ranges and a hold do not keep it awake either; nothing ever cuts
// a request in flight.
//
// A forced ask may also stop an app in Error or stuck waking (From says which):
// it is pending while the app stays in that status, and stops it at the next
// look (in Error, once nothing is in flight).
type SleepAsk struct {
	At    time.Time `json:"at"`
	By    string    `json:"by,omitempty"`
	Force bool      `json:"force,omitempty"`
	// From is the status a forced ask stops the app from, when not Up: Error
	// or WaitingForUp.
	From Status `json:"from,omitempty"`
}

// Pending reports whether the ask still applies to rec.
func (s *SleepAsk) Pending(rec Record) bool {
	return s != nil && (s.From == "" && rec.Status == StatusUp && !s.At.Before(rec.LastUpAt) || s.stopsStuck(rec))
}

// stopsStuck reports whether the ask is an operator's forced stop of rec, an
// app in Error or stuck waking, asked since it reached that status.
func (s *SleepAsk) stopsStuck(rec Record) bool {
	return s != nil && s.Force && s.From != "" && rec.Status == s.From && !s.At.Before(rec.LastStatusUpdate)
}

// settling reports whether rec was stopped by an operator's forced sleep while
// it was waking less than RestartAfter ago: a platform that lags (Clever Cloud
// says SHOULD_BE_DOWN until a deployment begins) may still begin the start it
// had accepted, so no start is sent before.
func (s *SleepAsk) settling(rec Record, now time.Time) bool {
	return s.stuckStop(rec) && s.From == StatusWaitingForUp && !rec.StopSentAt.Before(s.At) && now.Sub(rec.StopSentAt) < RestartAfter
}

// stuckStop reports whether rec, in WaitingForShutdown, is the forced stop of
// an app that was in Error or stuck waking (asked since it last came up).
func (s *SleepAsk) stuckStop(rec Record) bool {
	return s != nil && s.Force && s.From != "" && !s.At.Before(rec.LastUpAt)
}

// WakeTimes are the phases of one wake, as far as they went: the wake asked (the
// first ask that led to the start), the platform accepting the start call, the
// platform reporting the app up (for the process driver, after its readiness
// probe passed), and the first held request answered by the app on some node.
type WakeTimes struct {
	AskedAt       time.Time `json:"asked_at"`
	AcceptedAt    time.Time `json:"accepted_at,omitzero"`
	UpAt          time.Time `json:"up_at,omitzero"`
	FirstAnswerAt time.Time `json:"first_answer_at,omitzero"`
	// Prewake: the wake was a learned pre-wake, not a request's.
	Prewake bool `json:"prewake,omitempty"`
}

// Phase names, as events, history and the API give them.
const (
	PhaseAccepted    = "start_accepted"
	PhaseUp          = "platform_up"
	PhaseFirstAnswer = "first_answer"
)

// Durations returns each phase's length from the phase before it, in order,
// for the phases reached: start_accepted (from the ask), platform_up, first_answer.
func (w *WakeTimes) Durations() []PhaseDuration {
	if w == nil || w.AskedAt.IsZero() {
		return nil
	}
	var out []PhaseDuration
	prev := w.AskedAt
	for _, p := range []struct {
		name string
		at   time.Time
	}{{PhaseAccepted, w.AcceptedAt}, {PhaseUp, w.UpAt}, {PhaseFirstAnswer, w.FirstAnswerAt}} {
		if p.at.IsZero() {
			continue
		}
		out = append(out, PhaseDuration{Phase: p.name, Seconds: p.at.Sub(prev).Seconds()})
		prev = p.at
	}
	return out
}

// Total is the wake's length so far: from the ask to its last phase reached.
func (w *WakeTimes) Total() time.Duration {
	if w == nil || w.AskedAt.IsZero() {
		return 0
	}
	last := w.AskedAt
	for _, t := range []time.Time{w.AcceptedAt, w.UpAt, w.FirstAnswerAt} {
		last = latest(last, t)
	}
	return last.Sub(w.AskedAt)
}

// PhaseDuration is one phase of a wake and how long it took.
type PhaseDuration struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// The kinds of history entries that change no status (Transition.Kind).
const (
	EventHold     = "hold"     // a keep-warm hold set
	EventRelease  = "release"  // a hold ended by an operator
	EventSleep    = "sleep"    // an operator asked the app to sleep now
	EventWakeAsk  = "wake_ask" // an operator asked the app to wake
	EventWake     = "wake"     // a wake's phases, once the app answered
	EventSettings = "settings" // the dry run or the kill switch changed (not per app)
	// EventHoldExpired: a hold ran out by itself (not released), noticed by
	// the leader's job at its first look at the app after the hold's end.
	EventHoldExpired = "hold_expired"
)

// operatorName cleans a "by" given by an operator: trimmed, at most 64
// characters, "admin API" when empty.
func operatorName(by string) string {
	by = strings.TrimSpace(by)
	if by == "" {
		return "admin API"
	}
	if r := []rune(by); len(r) > 64 {
		by = string(r[:64])
	}
	return by
}

package reaper

import (
	"time"

	"github.com/reapergw/reaper/paas"
)

// Status is where an app stands for the reaper.
type Status string

// The six statuses of the reference protocol. Their names are part of the wire
// protocol (the CleverCloud-Reaper-Status header) and must not change.
const (
	// WaitingForInit: known to a route, never observed yet.
	StatusWaitingForInit Status = "WaitingForInit"
	// Up: running; requests go through.
	StatusUp Status = "Up"
	// WaitingForShutdown: the reaper asked the platform to stop it.
	StatusWaitingForShutdown Status = "WaitingForShutdown"
	// Down: stopped.
	StatusDown Status = "Down"
	// WaitingForUp: starting.
	StatusWaitingForUp Status = "WaitingForUp"
	// Error: the reaper keeps its hands off until an operator resets it; requests go
	// through (the app may well be running).
	StatusError Status = "Error"
)

// Statuses lists every status, for exhaustive tests and documentation.
var Statuses = []Status{
	StatusWaitingForInit, StatusUp, StatusWaitingForShutdown,
	StatusDown, StatusWaitingForUp, StatusError,
}

// Asleep reports whether requests cannot go through now: Down, WaitingForShutdown
// or WaitingForUp.
func (s Status) Asleep() bool {
	return s == StatusDown || s == StatusWaitingForShutdown || s == StatusWaitingForUp
}

// Transitional reports whether the app is between two stable statuses, so the job
// looks at it on every fast tick.
func (s Status) Transitional() bool {
	return s == StatusWaitingForInit || s == StatusWaitingForShutdown || s == StatusWaitingForUp
}

// Marker is the value of the CleverCloud-Reaper-Status header for an answer given
// while the app is in this status: the status itself while asleep or in error,
// "Up" otherwise.
func (s Status) Marker() string {
	switch s {
	case StatusWaitingForShutdown, StatusDown, StatusWaitingForUp, StatusError:
		return string(s)
	}
	return string(StatusUp)
}

// Record is what the reaper knows of one app. The leader writes it after each
// decision; every node reads it to answer requests.
type Record struct {
	AppID string `json:"app_id"`
	Owner string `json:"owner_id,omitempty"`
	Name  string `json:"name,omitempty"`

	Status Status `json:"status"`
	// Cause says why the app reached its status ("idle for 15m0s", "woken by a
	// request", "stopped from outside").
	Cause string `json:"cause,omitempty"`
	// ErrorCause says what went wrong, in Error.
	ErrorCause string `json:"error_cause,omitempty"`
	// PlatformState is the platform's state at the last observation.
	PlatformState paas.State `json:"clever_state,omitempty"`

	LastStatusUpdate time.Time `json:"last_status_update"`
	LastUpAt         time.Time `json:"last_up_at"`
	LastDownAt       time.Time `json:"last_down_at"`
	// ActionAt is when the reaper's current start or stop began; the fail timeout
	// counts from it, and a start sent again after no progress keeps it.
	ActionAt time.Time `json:"action_at"`
	// StartSentAt is when the last start call was sent (the 60 s no-progress rule).
	StartSentAt time.Time `json:"start_sent_at"`
	// RetryStart is set while the last start is not known to have been accepted:
	// from the moment it is decided until the platform accepts the call, and
	// after a call that failed for a passing reason (rate limit, busy app,
	// platform error). A leader that finds it set with no sign of the start on the
	// platform sends the start again once UncertainStartGrace has passed (the
	// leader that sent it may have died before its call went out).
	RetryStart bool `json:"retry_start,omitempty"`
	// StopSentAt is when the platform last accepted our stop. A WaitingForShutdown
	// whose stop was never sent (the step was cut short: leadership lost, the node
	// stopped) is decided again instead of waiting for a stop that cannot show.
	StopSentAt  time.Time `json:"stop_sent_at"`
	LastCheckAt time.Time `json:"last_check_at"`

	// Hold is the operator's keep-warm hold, if one was ever set: while it is
	// Active the app is woken if asleep and never put to sleep; once it ended
	// (expired, or released: Until moved to the release time) the idle clock
	// counts from its end.
	Hold *KeepWarm `json:"hold,omitempty"`
	// SleepAsk is an operator's "put to sleep now", pending while the app stays
	// Up (see SleepAsk.Pending).
	SleepAsk *SleepAsk `json:"sleep_ask,omitempty"`
	// Wake times the current or last wake, phase by phase.
	Wake *WakeTimes `json:"wake,omitempty"`
	// Boots are the app's failed boots in a row, nil when none (boots.go).
	Boots *FailedBoots `json:"failed_boots,omitempty"`
	// SavingSince is when reaper's stop put the app Down, while it stays Down;
	// Saved sums the closed stretches (see savings.go).
	SavingSince time.Time  `json:"saving_since,omitzero"`
	Saved       *SavedTime `json:"saved,omitempty"`
	// MemoryBytes is what the app held when reaper last put it to sleep, as the
	// driver measured or knows it (0: unknown).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Busy is set while the app's sleep is postponed because its busy_url says
	// it is busy, or fails (busy.go).
	Busy *BusyNote `json:"busy,omitempty"`

	// Term is the Raft term of the leader that wrote the record (0 on a single
	// node). A store refuses to replace a record with one of an older term.
	Term uint64 `json:"term"`
	// Revision counts the record's writes; with Term it orders the records a node
	// sees (a notification and a poll may arrive out of order), whatever the
	// clocks of the nodes say.
	Revision uint64 `json:"revision"`
}

// Transition is one entry of the app's history: a change of status (Kind
// empty), written with the record that made it, or an event that changes no
// status (an operator's action, a wake's phases), added by AddEvent.
type Transition struct {
	AppID string    `json:"app_id"`
	From  Status    `json:"from"`
	To    Status    `json:"to"`
	Cause string    `json:"cause"`
	At    time.Time `json:"at"`
	// Kind is empty for a change of status, else one of the Event… kinds.
	Kind string `json:"kind,omitempty"`
	// By is who did it: an operator's name for an action, empty for reaper.
	By string `json:"by,omitempty"`
	// Node is the node where it happened, when known.
	Node string `json:"node,omitempty"`
	// Hold is the hold an EventHold entry set.
	Hold *KeepWarm `json:"hold,omitempty"`
	// Phases are the times of an EventWake entry, and of the change of status
	// from WaitingForUp to Up (the wake as far as the platform goes: see
	// UpPhases).
	Phases *WakeTimes `json:"phases,omitempty"`
}

// UpPhases is what a store puts in the Phases of the history entry of a
// change of status from `from` to rec's: rec's wake when the app came up after
// one (WaitingForUp → Up), else nil. That entry is the wake's record as far as
// the platform goes; the node that answers the first held request adds an
// EventWake entry with the last phase. One entry for each, so a history lists
// a wake once, and its first answer once per node that answered one.
func UpPhases(from Status, rec Record) *WakeTimes {
	if from != StatusWaitingForUp || rec.Status != StatusUp || rec.Wake == nil {
		return nil
	}
	w := *rec.Wake
	return &w
}

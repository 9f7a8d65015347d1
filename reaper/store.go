package reaper

import (
	"context"
	"errors"
	"time"
)

// Store is where the reaper keeps what must outlive a request and be shared by the
// nodes of a cluster: records and their history, access times, in-flight counts,
// wake asks, per-app locks, settings and the webhooks' queues of events. The in-memory store (NewMemStore) serves a
// single node and writes a state file; reaper/valkeystore serves a cluster. Both
// pass the contract suite in reaper/storetest.
//
// Every method is bounded by its context and safe for concurrent use.
type Store interface {
	RecordStore
	HistoryStore
	TrafficStore
	AskStore
	Locker
	SettingsStore
	EventQueue
}

// RecordStore keeps one Record per app.
type RecordStore interface {
	// Record returns the app's record; ok is false when there is none.
	Record(ctx context.Context, appID string) (rec Record, ok bool, err error)
	// Records returns every record, in no particular order.
	Records(ctx context.Context) ([]Record, error)
	// PutRecord stores rec, unless the stored record was written in a later Raft
	// term than rec.Term: then it returns ErrStaleTerm and changes nothing. The
	// store is the fence that keeps a deposed leader from overwriting its
	// successor's work. When rec's status differs from the stored record's
	// (WaitingForInit when there is none), the same step appends the transition
	// {From: the stored status, To: rec.Status, Cause: rec.Cause, At:
	// rec.LastStatusUpdate} to the app's history: a record and its history entry
	// are written together or not at all, whoever dies in between.
	PutRecord(ctx context.Context, rec Record) error
	// DeleteRecord forgets the app (with the same term rule).
	DeleteRecord(ctx context.Context, appID string, term uint64) error
}

// HistoryStore keeps the latest transitions of each app (a capped list of
// HistoryCap entries, the oldest dropped first), written by PutRecord.
type HistoryStore interface {
	// History returns the app's transitions, newest first, skipping offset and
	// returning at most limit, with the total count kept.
	History(ctx context.Context, appID string, offset, limit int) (page []Transition, total int, err error)
	// AddEvent adds an entry that changes no status (an operator's action, a
	// wake's phases: t.Kind is set) to t.AppID's history, as the newest entry,
	// within the same cap. Unlike a change of status it is not tied to a record
	// write: whoever did it adds it, on any node.
	AddEvent(ctx context.Context, t Transition) error
}

// HistoryCap is how many transitions a store keeps per app.
const HistoryCap = 500

// TrafficStore shares traffic between the nodes: when each app was last used, and
// how many requests or connections each node has open on it.
type TrafficStore interface {
	// TouchAccess merges access times, keeping for each app the latest of the
	// stored and the given time: an older time never moves a clock back.
	TouchAccess(ctx context.Context, access map[string]time.Time) error
	// LastAccess returns the latest access time of every app that has one.
	LastAccess(ctx context.Context) (map[string]time.Time, error)
	// SetInFlight replaces node's counts of open requests, connections and held
	// requests per app. They expire after ttl unless set again, so a node that
	// dies stops keeping its apps awake. Apps absent from counts have none.
	SetInFlight(ctx context.Context, node string, counts map[string]int, ttl time.Duration) error
	// InFlight returns, per app, the sum of the live counts of every node.
	InFlight(ctx context.Context) (map[string]int, error)
}

// AskStore keeps wake asks until they are handled or expire.
type AskStore interface {
	// AskWake records that a request wants the app awake, at time at; the ask is
	// kept for ttl (30 minutes in production). A later ask replaces an earlier one.
	AskWake(ctx context.Context, appID string, at time.Time, ttl time.Duration) error
	// WakeAsks returns the pending asks, by app.
	WakeAsks(ctx context.Context) (map[string]time.Time, error)
	// ClearWake removes the app's ask if it was made at or before upTo, so that an
	// ask made while the job handled an earlier one is never lost.
	ClearWake(ctx context.Context, appID string, upTo time.Time) error
}

// Locker hands out per-app locks, so that an app is never started or stopped by two
// deciders at once.
type Locker interface {
	// Lock takes the app's lock for ttl, on behalf of the leader of Raft term term
	// (0: a single node, or an operator). It does not wait: it returns ErrLocked
	// when another holder has it — unless that holder took it in an older term
	// other than 0: a deposed leader's lock is taken over at once (its writes are
	// fenced by term anyway, and its lock must not keep its successor from an app
	// for a whole ttl). A lock taken in term 0 is never taken over.
	Lock(ctx context.Context, appID string, term uint64, ttl time.Duration) (Lock, error)
	// LockAs is Lock on behalf of holder, an id unique to one decider (the job
	// draws a random one): besides a deposed leader's lock, it takes over at once
	// a lock that the same holder took in the same term — a lock the holder lost
	// track of, whose release failed while the store was unreachable, or whose
	// Lock call took it on the server but lost its answer. The caller promises
	// that it does not hold the app's lock when it calls LockAs (the job never
	// runs two steps of one app at once). A lock of another holder, or of the
	// same holder in another term, is taken over only as Lock says. holder must
	// not be empty nor contain ':'.
	LockAs(ctx context.Context, appID string, term uint64, holder string, ttl time.Duration) (Lock, error)
}

// Lock is a held per-app lock. Its methods act only if the lock is still ours
// (compare-and-act on a random token).
type Lock interface {
	// Extend pushes the expiry to ttl from now; ErrLockLost if it expired or was
	// taken by another holder.
	Extend(ctx context.Context, ttl time.Duration) error
	// Release frees the lock if still ours; releasing a lost lock is not an error.
	Release(ctx context.Context) error
}

// SettingsStore keeps the operator's switches, shared by every node.
type SettingsStore interface {
	Settings(ctx context.Context) (Settings, error)
	PutSettings(ctx context.Context, s Settings) error
}

// Settings are the operator's switches.
type Settings struct {
	// DryRun: decisions are made and logged ("would put X to sleep") but no app is
	// stopped. Wakes still happen: a request never waits on a dry run.
	DryRun bool `json:"dry_run"`
	// KillSwitch: no app is stopped at all, silently; for emergencies.
	KillSwitch bool `json:"kill_switch"`
}

// RecordWatcher is implemented by stores that push record changes to every node
// (the in-memory store calls back at once; the Valkey store uses pub/sub). Watch
// calls changed with the app id after each PutRecord, until ctx ends; changed must
// not block. Nodes also poll, so a missed notification only delays.
type RecordWatcher interface {
	Watch(ctx context.Context, changed func(appID string))
}

// Store errors.
var (
	// ErrStaleTerm: a write from a leader of an older Raft term was refused.
	ErrStaleTerm = errors.New("reaper: record written by a newer leader term")
	// ErrLocked: another holder has the app's lock.
	ErrLocked = errors.New("reaper: app is locked")
	// ErrLockLost: the lock expired or another holder took it.
	ErrLockLost = errors.New("reaper: lock lost")
)

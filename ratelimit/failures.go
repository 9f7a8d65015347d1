package ratelimit

import (
	"log/slog"
	"sync"
	"time"
)

// Failures is the budget of failed attempts per client that every door to
// the admin token shares (the admin API's Bearer token, the dashboard's
// sign-in, the waiting page's preview): a client that failed too often is
// refused at all of them until its bucket refills, whichever it tries next.
// Only failures are counted, so a script that holds the token is never
// limited, however often it calls.
//
// Failures are logged per client at most once every LogEvery, each line with
// how many failed and how many were refused since the previous one: the
// first at once, the rest when LogEvery has passed (a timer logs what the
// last minute of an attack left unsaid). Safe for concurrent use.
type Failures struct {
	lim *Limiter
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]*tally // clients with a line logged in the last LogEvery, or one due
	timer   *time.Timer       // set while a tally waits for its line
	due     time.Time         // when timer fires
}

// LogEvery is how often at most one client's failures are logged.
const LogEvery = time.Minute

// The admin doors' budget (NewDoors): 5 failures in a row, then one every
// 12 s (5 a minute), for the last 4096 clients that failed. Nobody who holds
// the token needs more; a guesser gets 7,200 tries a day per address.
const (
	DoorBurst   = 5
	DoorRefill  = 12 * time.Second
	DoorClients = 4096
)

// NewDoors returns the Failures budget that a node's admin doors share.
func NewDoors(log *slog.Logger) *Failures {
	return NewFailures(DoorBurst, DoorRefill, DoorClients, log)
}

// tally is what one client did since its last line.
type tally struct {
	door     string // the door of its last failure
	failed   int
	refused  int
	loggedAt time.Time
}

// NewFailures returns a budget of burst failures per client, one more every
// refill, for at most capacity clients; lines go to log (nil: none).
func NewFailures(burst int, refill time.Duration, capacity int, log *slog.Logger) *Failures {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Failures{lim: New(burst, refill, capacity), log: log, pending: map[string]*tally{}}
}

// Limited reports whether client (a Key) is refused at now, and for how long
// (a whole number of seconds, for Retry-After). A refusal is counted for the
// log (door names where it came).
func (f *Failures) Limited(client, door string, now time.Time) (time.Duration, bool) {
	wait := f.lim.Wait(client, now)
	if wait <= 0 {
		return 0, false
	}
	f.note(client, door, now, func(t *tally) { t.refused++ })
	return wait, true
}

// Failed counts a failed attempt of client at door (a wrong token, say).
func (f *Failures) Failed(client, door string, now time.Time) {
	f.lim.Allow(client, now)
	f.note(client, door, now, func(t *tally) { t.failed++ })
}

// note counts what client did in its tally and logs it at once when its last
// line is LogEvery old; otherwise the timer logs it when it is.
func (f *Failures) note(client, door string, now time.Time, count func(*tally)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.pending[client]
	if t == nil {
		if len(f.pending) >= f.lim.cap {
			// As many clients as the limiter holds failed within a minute:
			// forget those that are quiet, else this one is logged alone.
			f.sweep(now)
		}
		t = &tally{}
		if len(f.pending) < f.lim.cap {
			f.pending[client] = t
		}
	}
	t.door = door
	count(t)
	if t.loggedAt.IsZero() || now.Sub(t.loggedAt) >= LogEvery {
		f.logLine(client, t, now)
		return
	}
	f.arm(t.loggedAt.Add(LogEvery))
}

func (f *Failures) logLine(client string, t *tally, now time.Time) {
	args := []any{"client", client, "door", t.door, "failed", t.failed, "refused", t.refused}
	if !t.loggedAt.IsZero() {
		args = append(args, "since", now.Sub(t.loggedAt).Round(time.Second).String())
	}
	f.log.Warn("failed attempts at the admin token", args...)
	t.failed, t.refused, t.loggedAt = 0, 0, now
}

// arm makes sure the timer fires by at.
func (f *Failures) arm(at time.Time) {
	if f.timer != nil && !f.due.After(at) {
		return
	}
	if f.timer != nil {
		f.timer.Stop()
	}
	f.due = at
	f.timer = time.AfterFunc(time.Until(at), f.flush)
}

// flush logs the tallies whose line is due, forgets the quiet ones, and arms
// the timer for the next one due.
func (f *Failures) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.timer = nil
	now := time.Now()
	f.sweep(now)
	var next time.Time
	for client, t := range f.pending {
		if t.failed == 0 && t.refused == 0 {
			continue // logged already; swept once quiet for LogEvery
		}
		at := t.loggedAt.Add(LogEvery)
		if !now.Before(at) {
			f.logLine(client, t, now)
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !next.IsZero() {
		f.arm(next)
	}
}

// sweep forgets the clients with nothing to log whose last line is LogEvery
// old: their next failure is logged at once anyway.
func (f *Failures) sweep(now time.Time) {
	for client, t := range f.pending {
		if t.failed == 0 && t.refused == 0 && now.Sub(t.loggedAt) >= LogEvery {
			delete(f.pending, client)
		}
	}
}

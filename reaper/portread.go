package reaper

import "time"

// The port's read side for one claimed app: what a transport shows its callers
// of the app and of its wake (HTTP: the waiting page, its live progress,
// Server-Timing). None of these waits: each reads the node's view in memory.

// Record is the app's last known record on this node, nil before its first.
// The record is shared (the node's view replaces it, never changes it): never
// modify it.
func (r *Route) Record() *Record { return r.a.rec.Load() }

// Changed returns a channel closed at the next change of the app's status or of
// its wake's phases. Take it before reading the record (Record, Status), so that
// no change falls between the two.
func (r *Route) Changed() <-chan struct{} { return r.a.changed() }

// UpSeen is when this node saw the app come up, by its own clock: what the
// ready delay counts from. Zero when it never did.
func (r *Route) UpSeen() time.Time {
	if n := r.a.upSeen.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// ReadyDelay is how long after the app comes up its callers are held still
// (the route's ready_delay, else the driver's default for the app).
func (r *Route) ReadyDelay() time.Duration { return r.readyDelay }

// ETA is how long the app usually takes to wake (the median of its recent
// boots, ask to up: eta.go), and on how many boots that rests; 0, 0 when none
// is known yet.
func (r *Route) ETA() (time.Duration, int) { return r.a.boots.median() }

// FreshlyWoken reports whether the app is up and has not taken a held caller on
// this node since its last wake (Answered): a connection it drops then may be
// its boot's doing rather than its own (resend.go).
func (r *Route) FreshlyWoken() bool {
	rec := r.a.rec.Load()
	if rec == nil || rec.Status != StatusUp {
		return false
	}
	return rec.Wake == nil || r.a.firstAnswer.Load() != rec.Wake.AskedAt.UnixNano()
}

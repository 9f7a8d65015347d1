package reaper

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// A learned ETA: each app's recent boots (from the wake's ask to the platform
// reporting it up), learned from the records every node sees and, after a
// restart, from the wakes in the app's history. The waiting page and the API
// answers of a waking app say when it is usually ready.

// bootSamples is how many recent boots an app's ETA is the median of.
const bootSamples = 10

// bootRing keeps an app's recent boot durations.
type bootRing struct {
	mu     sync.Mutex
	last   [bootSamples]time.Duration
	n      int   // samples kept (up to bootSamples)
	next   int   // where the next one goes
	askedN int64 // Wake.AskedAt (unix ns) of the latest sample: each wake counts once
	loaded bool  // the history was read
}

func (b *bootRing) add(askedAt time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if askedAt.UnixNano() == b.askedN {
		return
	}
	b.askedN = askedAt.UnixNano()
	b.last[b.next] = d
	b.next = (b.next + 1) % bootSamples
	b.n = min(b.n+1, bootSamples)
}

// median is the median of the kept boots, and how many there are.
func (b *bootRing) median() (time.Duration, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 {
		return 0, 0
	}
	s := slices.Clone(b.last[:b.n])
	slices.Sort(s)
	if b.n%2 == 1 {
		return s[b.n/2], b.n
	}
	return (s[b.n/2-1] + s[b.n/2]) / 2, b.n
}

// learnBoot counts the boot of a record that came up after a wake.
func (a *app) learnBoot(rec *Record) {
	if w := rec.Wake; w != nil && !w.UpAt.IsZero() && !w.AskedAt.IsZero() {
		a.boots.add(w.AskedAt, w.UpAt.Sub(w.AskedAt))
	}
}

// ETA is how long the app usually takes to wake (the median of its last boots,
// ask to up) and on how many boots that rests; 0, 0 when none is known yet.
func (e *Engine) ETA(appID string) (time.Duration, int) {
	a := e.app(appID)
	if a == nil {
		return 0, 0
	}
	return a.boots.median()
}

// Remaining is how long the app's current wake should still take by its ETA
// (at least 0), whether it is known, and whether the wake runs longer than
// usual (past its ETA).
func (e *Engine) Remaining(appID string, now time.Time) (left time.Duration, known, late bool) {
	eta, n := e.ETA(appID)
	rec, ok := e.Record(appID)
	if n == 0 || !ok {
		return 0, false, false
	}
	started := now
	if rec.Status == StatusWaitingForUp && rec.Wake != nil && !rec.Wake.AskedAt.IsZero() {
		started = rec.Wake.AskedAt
	}
	left = eta - now.Sub(started)
	if left < 0 {
		return 0, true, true
	}
	return left, true, false
}

// loadBoots reads the recent wakes of every managed app from the store's
// history, once per app, so that a restarted node keeps its ETAs.
func (e *Engine) loadBoots(ctx context.Context) {
	for _, m := range e.Managed() {
		a := e.app(m.App.ID)
		if a == nil {
			continue
		}
		a.boots.mu.Lock()
		done := a.boots.loaded
		a.boots.loaded = true
		a.boots.mu.Unlock()
		if done {
			continue
		}
		items, _, err := e.store.History(ctx, m.App.ID, 0, HistoryCap)
		if err != nil {
			e.storeErr.log(e.log, "reading the history for the apps' boot times failed", err)
			a.boots.mu.Lock()
			a.boots.loaded = false
			a.boots.mu.Unlock()
			continue
		}
		for i := len(items) - 1; i >= 0; i-- { // oldest first: the newest stay
			// A wake's entries: the change to Up (UpPhases), its first answers.
			if t := items[i]; t.Phases != nil && !t.Phases.UpAt.IsZero() {
				a.boots.add(t.Phases.AskedAt, t.Phases.UpAt.Sub(t.Phases.AskedAt))
			}
		}
	}
}

// serverTiming is the Server-Timing value of an answer released after a wake
// (its phases, in milliseconds): reaper-wake from the ask to now, then
// reaper-start (ask → start accepted), reaper-boot (→ platform up) and
// reaper-ready (→ now). "" when rec has no wake.
func serverTiming(rec *Record, now time.Time) string {
	if rec == nil || rec.Wake == nil || rec.Wake.AskedAt.IsZero() {
		return ""
	}
	w := rec.Wake
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	out := `reaper-wake;dur=` + ms(now.Sub(w.AskedAt)) + `;desc="cold start"`
	prev := w.AskedAt
	for _, p := range []struct {
		name string
		at   time.Time
	}{{"reaper-start", w.AcceptedAt}, {"reaper-boot", w.UpAt}, {"reaper-ready", now}} {
		if p.at.IsZero() || p.at.Before(prev) {
			continue
		}
		out += ", " + p.name + ";dur=" + ms(p.at.Sub(prev))
		prev = p.at
	}
	return out
}

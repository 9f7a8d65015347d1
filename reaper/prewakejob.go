package reaper

import (
	"context"
	"sync"
	"time"
)

// The job's side of learned pre-wake: predictions per app, recomputed from the
// history at most every prewakeRefresh, and the arrivals, hits and misses it
// writes there.

// prewakeRefresh is how often an app's predicted visits are computed again.
const prewakeRefresh = time.Hour

// prewakeState is the job's view of one app's pre-wake.
type prewakeState struct {
	slots    []PrewakeSlot
	computed time.Time
	judged   time.Time // Wake.UpAt of the last pre-wake judged a hit or a miss
}

type prewakes struct {
	mu   sync.Mutex
	apps map[string]*prewakeState
}

func (p *prewakes) get(id string) *prewakeState {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.apps == nil {
		p.apps = map[string]*prewakeState{}
	}
	s := p.apps[id]
	if s == nil {
		s = &prewakeState{}
		p.apps[id] = s
	}
	return s
}

// arrivalsOf reads the app's arrivals from its history.
func arrivalsOf(items []Transition) []time.Time {
	var out []time.Time
	for _, t := range items {
		if t.Kind == EventArrival {
			out = append(out, t.At)
		}
	}
	return out
}

// prewakeSlots returns the app's predicted visits, computed again from its
// history when older than prewakeRefresh. Steps of one app never run at once,
// so its state needs no lock of its own.
func (j *Job) prewakeSlots(ctx context.Context, t target, now time.Time) []PrewakeSlot {
	s := j.prewake.get(t.app.ID)
	if !s.computed.IsZero() && now.Sub(s.computed) < prewakeRefresh {
		return s.slots
	}
	items, _, err := j.opts.Store.History(ctx, t.app.ID, 0, HistoryCap)
	if err != nil {
		j.apiErr.log(j.log, "reading an app's history for its pre-wake failed", err)
		return s.slots
	}
	s.slots, s.computed = PredictArrivals(arrivalsOf(items), now, t.policy.location()), now
	return s.slots
}

// prewakeDue says whether Decide should wake the app for a predicted visit.
func (j *Job) prewakeDue(ctx context.Context, t target, now time.Time) bool {
	if !t.policy.Prewake {
		return false
	}
	boot, _ := j.opts.Engine.ETA(t.app.ID)
	_, due := PrewakeDue(j.prewakeSlots(ctx, t, now), boot, now, t.policy.location())
	return due
}

// prewakeOutcome records, once per pre-wake, whether a visit came (a hit, and
// the visit is an arrival) or the app goes back to sleep unvisited (a miss).
func (j *Job) prewakeOutcome(ctx context.Context, t target, rec Record, in Input, now time.Time) {
	w := rec.Wake
	if !t.policy.Prewake || rec.Status != StatusUp || w == nil || !w.Prewake || w.UpAt.IsZero() {
		return
	}
	s := j.prewake.get(t.app.ID)
	if s.judged.Equal(w.UpAt) {
		return
	}
	var events []Transition
	switch {
	case in.LastAccess.After(w.UpAt):
		events = append(events,
			Transition{AppID: rec.AppID, From: rec.Status, To: rec.Status, At: in.LastAccess, Kind: EventPrewake, Cause: "hit"},
			Transition{AppID: rec.AppID, From: rec.Status, To: rec.Status, At: in.LastAccess, Kind: EventArrival, Cause: "came to an app woken for it"})
	case Idle(rec, in, now, t.policy):
		events = append(events, Transition{AppID: rec.AppID, From: rec.Status, To: rec.Status, At: now, Kind: EventPrewake, Cause: "miss"})
	default:
		return
	}
	s.judged = w.UpAt
	for _, e := range events {
		if err := j.opts.Store.AddEvent(ctx, e); err != nil {
			j.apiErr.log(j.log, "adding a pre-wake's outcome to the history failed", err)
		}
	}
}

// noteArrival records the first request after a sleep: the ask that woke it.
// Every app's are kept, so that an operator sees what pre-wake would do before
// turning it on.
func (j *Job) noteArrival(ctx context.Context, t target, next Record) {
	if next.Cause != CauseWakeAsked || next.Wake == nil {
		return
	}
	// An operator's wake is no visit: it left its ask in the history first.
	if recent, _, err := j.opts.Store.History(ctx, next.AppID, 0, 10); err == nil {
		for _, e := range recent {
			if e.Kind == EventWakeAsk && !e.At.After(next.Wake.AskedAt.Add(time.Second)) && next.Wake.AskedAt.Sub(e.At) < time.Minute {
				return
			}
		}
	}
	e := Transition{AppID: next.AppID, From: next.Status, To: next.Status, At: next.Wake.AskedAt, Kind: EventArrival, Cause: "woke it"}
	if err := j.opts.Store.AddEvent(ctx, e); err != nil {
		j.apiErr.log(j.log, "adding an arrival to the history failed", err)
	}
}

// PrewakeView is an app's learned pre-wake, as the admin API shows it.
type PrewakeView struct {
	AppID    string `json:"app_id"`
	Enabled  bool   `json:"enabled"`
	Timezone string `json:"timezone"`
	Slots    []struct {
		PrewakeSlot
		Day string `json:"day"`
		At  string `json:"at"`
	} `json:"slots"`
	NextArrival *time.Time `json:"next_arrival"`
	NextWakeAt  *time.Time `json:"next_wake_at"`
	BootSeconds float64    `json:"boot_seconds"`
	Hits        int        `json:"hits"`
	Misses      int        `json:"misses"`
	// HitRate is hits / (hits + misses) over the lookback; null before any.
	HitRate *float64 `json:"hit_rate"`
}

// prewakeViewOf builds the view from the app's history (pure but for the clock
// given).
func prewakeViewOf(id string, p Policy, items []Transition, boot time.Duration, now time.Time) PrewakeView {
	loc := p.location()
	v := PrewakeView{AppID: id, Enabled: p.Prewake, Timezone: loc.String()}
	slots := PredictArrivals(arrivalsOf(items), now, loc)
	for _, s := range slots {
		v.Slots = append(v.Slots, struct {
			PrewakeSlot
			Day string `json:"day"`
			At  string `json:"at"`
		}{s, s.Weekday.String(), s.At()})
	}
	if boot <= 0 {
		boot = prewakeDefaultBoot
	}
	v.BootSeconds = boot.Seconds()
	if at, ok := NextArrival(slots, now, loc); ok {
		wake := at.Add(-boot - prewakeMargin)
		v.NextArrival, v.NextWakeAt = &at, &wake
	}
	for _, t := range items {
		if t.Kind != EventPrewake || now.Sub(t.At) > prewakeLookback {
			continue
		}
		if t.Cause == "hit" {
			v.Hits++
		} else {
			v.Misses++
		}
	}
	if n := v.Hits + v.Misses; n > 0 {
		r := float64(v.Hits) / float64(n)
		v.HitRate = &r
	}
	return v
}

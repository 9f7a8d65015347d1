package reaper

import (
	"context"
	"sync/atomic"
	"time"
)

// Traffic is counted in memory on the request path (atomics only) and flushed to
// the store in the background, so that an awake app's requests never wait on I/O.

// appTraffic is one app's traffic on this node.
type appTraffic struct {
	lastAccess atomic.Int64 // unix nanoseconds of the latest request end or start
	flushed    atomic.Int64 // lastAccess at the last flush
	inFlight   atomic.Int64 // requests and connections passing through
	quiet      atomic.Int64 // of inFlight, those that are not traffic (beginQuiet)
}

// touch records a request at t, keeping the latest time.
func (a *appTraffic) touch(t time.Time) {
	n := t.UnixNano()
	for {
		cur := a.lastAccess.Load()
		if n <= cur || a.lastAccess.CompareAndSwap(cur, n) {
			return
		}
	}
}

// begin counts a request or connection passing through until the returned function
// is called; that function reads the clock when it runs, so the idle clock starts
// when the request ends, not when it began.
func (a *appTraffic) begin() (end func()) {
	a.inFlight.Add(1)
	return func() {
		a.touch(time.Now())
		a.inFlight.Add(-1)
	}
}

// beginQuiet counts a request that is not traffic (a monitor's, a crawler's
// robots.txt) as passing through until the returned function is called: the app
// is not stopped under it, but its idle clock does not move.
func (a *appTraffic) beginQuiet() (end func()) {
	a.inFlight.Add(1)
	a.quiet.Add(1)
	return func() {
		a.quiet.Add(-1)
		a.inFlight.Add(-1)
	}
}

// LocalTraffic is this node's own view of an app's traffic: its latest access and
// how many requests pass through or wait for it now. It is exact and immediate,
// unlike the store's view, which is as fresh as the last flush.
func (e *Engine) LocalTraffic(appID string) (lastAccess time.Time, busy int64) {
	a := e.app(appID)
	if a == nil {
		return time.Time{}, 0
	}
	if n := a.lastAccess.Load(); n > 0 {
		lastAccess = time.Unix(0, n)
	}
	return lastAccess, a.inFlight.Load() + a.held.Load()
}

// Flush writes access times that moved since the last flush and this node's
// in-flight counts to the store. The counts expire three flush intervals later, so
// a node that dies stops keeping its apps awake.
//
// An app with requests or connections open right now (other than quiet ones,
// which are no visit) is also reported as used now: should this node then lose the store for longer than the counts live, the
// app still has a full grace period from its last report, so it is never stopped
// under an open connection.
func (e *Engine) Flush(ctx context.Context) {
	now := time.Now()
	e.mu.RLock()
	access := map[string]time.Time{}
	counts := map[string]int{}
	marks := map[*app]int64{}
	for id, a := range e.apps {
		quiet := a.quiet.Load() // before the count: a quiet request that begins in between is counted as a visit, never the reverse
		if n := a.inFlight.Load() + a.held.Load(); n > 0 {
			counts[id] = int(n)
			if n > quiet { // a quiet request open now is no visit
				access[id] = now
			}
		}
		if la := a.lastAccess.Load(); la > a.flushed.Load() {
			marks[a] = la
			if t := time.Unix(0, la); t.After(access[id]) {
				access[id] = t
			}
		}
	}
	e.mu.RUnlock()
	if len(access) > 0 {
		if err := e.store.TouchAccess(ctx, access); err != nil {
			e.flushErr.log(e.log, "writing access times to the store failed; they stay in memory and go with the next flush", err)
		} else {
			for a, la := range marks {
				a.flushed.Store(la)
			}
		}
	}
	e.writeInFlight(ctx, counts)
	e.sweep()
}

// flushedCounts is what this node last wrote of its in-flight counts to the store, and
// until when the store keeps them for sure: its part of the store's sums, which
// OpenEverywhere takes out to put its exact counts in.
type flushedCounts struct {
	counts map[string]int
	live   time.Time
}

// writeInFlight writes this node's counts and remembers them. A write that failed
// may or may not have reached the store: the store then holds the old counts or
// the new ones, so what it surely holds is the smaller of the two, for as long as
// the old ones live.
func (e *Engine) writeInFlight(ctx context.Context, counts map[string]int) {
	ttl := 3 * e.opts.FlushInterval
	e.inFlightMu.Lock()
	defer e.inFlightMu.Unlock()
	before := time.Now() // the store counts the ttl from later: the counts live at least until before+ttl
	err := e.store.SetInFlight(ctx, e.opts.Node, counts, ttl)
	if err == nil {
		e.flushedCounts = flushedCounts{counts: counts, live: before.Add(ttl)}
		return
	}
	e.flushErr.log(e.log, "writing in-flight counts to the store failed", err)
	surely := map[string]int{}
	for id, n := range e.flushedCounts.counts {
		if m := min(n, counts[id]); m > 0 {
			surely[id] = m
		}
	}
	e.flushedCounts.counts = surely
}

// OpenEverywhere returns, per app, the requests, connections and held requests
// open over every node: the store's sums (the other nodes' counts as of their last
// flush) with this node's part, as of its own last flush, replaced by its exact
// count now. So a request that ended here a moment ago is not counted as open for
// up to a flush interval (an operator's "sleep now" right after the last request
// would be refused); another node's request still is until that node flushes.
// Apps with nothing open are absent. It blocks on the store, and while this
// node's counts are being written.
func (e *Engine) OpenEverywhere(ctx context.Context) (map[string]int, error) {
	e.inFlightMu.Lock()
	defer e.inFlightMu.Unlock()
	sums, err := e.store.InFlight(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	mine := e.flushedCounts
	live := time.Now().Before(mine.live)
	for id, n := range sums {
		if live {
			n -= mine.counts[id]
		}
		if n > 0 {
			out[id] = n
		}
	}
	e.mu.RLock()
	for id, a := range e.apps {
		if n := a.inFlight.Load() + a.held.Load(); n > 0 {
			out[id] += int(n)
		}
	}
	e.mu.RUnlock()
	return out, nil
}

// sweep lets go of the apps no route manages any more, once nothing passes
// through or waits for them and their traffic is in the store: over many reloads
// the node keeps only the apps it serves. (The job finds unmanaged apps through
// their stored records, keeps them awake and forgets them; a route that manages
// one again starts afresh from the store.)
func (e *Engine) sweep() {
	e.mu.Lock()
	defer e.mu.Unlock()
	deps := e.dependenciesLocked()
	for id, a := range e.apps {
		if e.topo != nil && (e.topo.groupOf[id] != nil || e.topo.former[id]) || deps[id] {
			continue // a group's member, a former one or a dependency: managed without a route (topology.go)
		}
		if len(a.claims) == 0 && a.inFlight.Load() == 0 && a.held.Load() == 0 && !a.waiting.Load() &&
			a.lastAccess.Load() <= a.flushed.Load() {
			delete(e.apps, id)
		}
	}
}

// Held is how many requests wait for the app on this node now, and InFlight how
// many requests and connections pass through to it.
func (e *Engine) Held(appID string) (held, inFlight int) {
	a := e.app(appID)
	if a == nil {
		return 0, 0
	}
	return int(a.held.Load()), int(a.inFlight.Load())
}

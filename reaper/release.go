package reaper

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// A crowd of held requests is released at the pace its app can take, not all at
// once: an app that just booted, with a small listen backlog, would see thousands
// of connections arrive together, drop some, and answer late enough for their
// requests to time out; and the gateway would hold every released request's
// buffers at the same moment. The release window works as TCP's slow start: it
// lets releaseWindowStart requests go, one more each time one of them is
// answered well (so it doubles with each round of answers), up to
// releaseWindowMax; an answer that is not (a status of 500 or more, or none)
// halves it, after which it grows by one per window of good answers.

const (
	// releaseWindowStart is how many held requests an app gets at once when it
	// wakes: few enough for the smallest listen backlog.
	releaseWindowStart = 8
	// releaseWindowMax bounds the requests released to one app and not yet
	// answered, on this node: enough to keep a fast app busy (its answers come
	// back within milliseconds), few enough that the requests under way cost the
	// node a few MiB.
	releaseWindowMax = 256
	// defaultCrowdedAbove is how many requests the node holds, all apps
	// together, past which a released request's connection is closed after its
	// answer (holds.crowdedAbove): an idle keep-alive connection costs the node
	// more (a goroutine and net/http's buffers, about 16 KiB) than a parked
	// request, and ten thousand of them left open by a released crowd would cost
	// it more than holding them did.
	defaultCrowdedAbove = 1000
)

// releaseWindow is one app's release pace; its methods are called under the
// app's holdMu. The zero value is a fresh window.
type releaseWindow struct {
	size      int // released requests that may be under way at once; 0: fresh
	inFlight  int // released, not ended yet
	threshold int // past it the window grows by one per window of good answers
	acked     int // good answers counted toward that next step
}

// take takes a place for one more released request, if the window has room.
func (w *releaseWindow) take() bool {
	if w.size == 0 {
		*w = releaseWindow{size: releaseWindowStart, threshold: releaseWindowMax}
	}
	if w.inFlight >= w.size {
		return false
	}
	w.inFlight++
	return true
}

// ended gives a place back; ok says whether the app answered well.
func (w *releaseWindow) ended(ok bool) {
	if w.size == 0 { // the window started afresh since (see done): nothing to give back
		return
	}
	w.inFlight = max(w.inFlight-1, 0)
	switch {
	case !ok:
		w.threshold = max(w.size/2, releaseWindowStart)
		w.size, w.acked = w.threshold, 0
	case w.size < w.threshold:
		w.size++ // slow start: one more per good answer
	default:
		if w.acked++; w.acked >= w.size {
			w.size, w.acked = w.size+1, 0
		}
	}
	w.size = min(w.size, releaseWindowMax)
}

// done starts the window afresh, for the app's next wake, once nothing is held
// for it any more: the requests released last give their places back to nobody
// (ended ignores them), and a place that was never given back (a request lost on
// its way) is not lost beyond this wake.
func (w *releaseWindow) done() { *w = releaseWindow{} }

// crowdGCPercent is the garbage collector's target (GOGC) while the node holds a
// crowd. Holding ten thousand requests keeps about 70 MiB live, and releasing
// them makes three times as much garbage within a second or two; at the default
// target the heap would grow to twice the live set before each collection. For
// the few seconds of a crowd, collecting four times as often keeps the node's
// peak near what holding costs, for a little CPU.
const crowdGCPercent = 25

// crowdGC lowers the garbage collector's target while the node holds more than
// a crowd, and puts back the one it found when the crowd is gone (fewer than half
// as many held). The target is the process's: the last engine to change it wins.
type crowdGC struct {
	on   atomic.Bool
	mu   sync.Mutex
	prev int // the target found, while on
}

// note is told the node's held count after each change, and the size of a crowd.
func (g *crowdGC) note(held, crowd int64) {
	if on := g.on.Load(); (!on && held <= crowd) || (on && held >= crowd/2) {
		return // the usual case: nothing changes, no lock
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case held > crowd && !g.on.Load():
		g.prev = debug.SetGCPercent(crowdGCPercent)
		g.on.Store(true)
	case held < crowd/2 && g.on.Load():
		debug.SetGCPercent(g.prev)
		g.on.Store(false)
	}
}

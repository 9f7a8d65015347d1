package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// The traffic: each app has bursts of use separated by idle spells longer than
// its grace period, so that it sleeps and wakes several times in a schedule, and
// an uptime monitor that polls it all along (which must never wake it).

// reqKind is what a client does.
type reqKind string

// The clients of the load generator.
const (
	kindAPIHold        reqKind = "api hold"        // GET, JSON, on the route in hold mode
	kindAPIUnavailable reqKind = "api unavailable" // GET, JSON, on the route in unavailable mode
	kindBrowser        reqKind = "browser"         // GET accepting text/html
	kindMonitor        reqKind = "monitor"         // an uptime monitor's user agent
	kindPost           reqKind = "POST"            // a body whose hash the app checks
	kindDownload       reqKind = "download"        // a long answer, streamed
	kindWebSocket      reqKind = "websocket"       // messages echoed for a while
)

var allReqKinds = []reqKind{kindAPIHold, kindAPIUnavailable, kindBrowser, kindMonitor, kindPost, kindDownload, kindWebSocket}

// monitorUA is the monitoring filter of every route, and what monitors send.
var monitorUA = regexp.MustCompile(`(?i)uptimerobot`)

// held reports whether the kind is held while its app sleeps (the route in hold
// mode, and not a page load).
func (k reqKind) held() bool {
	return k == kindAPIHold || k == kindPost || k == kindDownload || k == kindWebSocket
}

// planned is one request of the plan.
type planned struct {
	id   string
	at   time.Duration
	app  int
	kind reqKind
	node int           // the node it prefers (the next one up if that one is down)
	size int           // the POST's body, or the download's length
	long time.Duration // how long a download streams, or a WebSocket stays open
	seed uint64        // of the POST's body
}

// A burst's requests come this far apart on average.
const burstGap = 350 * time.Millisecond

// planTraffic plans every request of a schedule of length d.
func planTraffic(rng *rand.Rand, d time.Duration, apps int) []planned {
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	var out []planned
	for app := range apps {
		for t := between(0, 10*time.Second); t < d; {
			end := t + between(2*time.Second, 6*time.Second)
			for ; t < end && t < d; t += time.Duration(rng.ExpFloat64() * float64(burstGap)) {
				out = append(out, planRequest(rng, between, t, app))
			}
			// Idle: long enough, often, for the app to sleep (the grace period, a
			// full pass of the job, the 2.5 s before a stop).
			t += between(gracePeriod+3*time.Second, 4*gracePeriod)
		}
		for t := between(0, 2*time.Second); t < d; t += between(1500*time.Millisecond, 3*time.Second) {
			out = append(out, planned{at: t, app: app, kind: kindMonitor, node: rng.IntN(clusterSize)})
		}
	}
	slices.SortStableFunc(out, func(a, b planned) int { return int(a.at - b.at) })
	for i := range out {
		out[i].id = fmt.Sprintf("r%d", i+1)
	}
	return out
}

// kindWeights are the shares of a burst's requests.
var kindWeights = []struct {
	kind   reqKind
	weight int
}{{kindAPIHold, 30}, {kindAPIUnavailable, 12}, {kindBrowser, 12}, {kindPost, 26}, {kindDownload, 10}, {kindWebSocket, 10}}

func planRequest(rng *rand.Rand, between func(lo, hi time.Duration) time.Duration, at time.Duration, app int) planned {
	p := planned{at: at, app: app, node: rng.IntN(clusterSize)}
	n := rng.IntN(100)
	for _, kw := range kindWeights {
		if n < kw.weight {
			p.kind = kw.kind
			break
		}
		n -= kw.weight
	}
	switch p.kind {
	case kindPost:
		p.seed = rng.Uint64()
		p.size = 1 + rng.IntN(16<<10)
		if rng.IntN(10) < 3 { // larger than a held body kept in memory (64 KiB): streamed
			p.size = 64<<10 + rng.IntN(192<<10)
		}
	case kindDownload:
		p.size = 256<<10 + rng.IntN(1792<<10)
		p.long = between(time.Second, 4*time.Second)
	case kindWebSocket:
		p.long = between(time.Second, 4*time.Second)
	}
	return p
}

// traffic sends the plan's requests and keeps their results.
type traffic struct {
	w       *world
	clients *clients
	wg      sync.WaitGroup
	mu      sync.Mutex
	results []result
}

// run sends every planned request at its time, each on a goroutine of its own,
// and returns once the last is sent (not answered: wait does that).
func (t *traffic) run(ctx context.Context, start time.Time, plan []planned) {
	for _, p := range plan {
		if !sleepUntil(ctx, start.Add(p.at)) {
			return
		}
		t.send(ctx, p)
	}
}

// send sends one request on a goroutine, through the node it prefers or the next
// one up.
func (t *traffic) send(ctx context.Context, p planned) {
	node := t.w.pickNode(p.node)
	if node < 0 {
		return // every node is down: nothing to send to (never planned: one node fault at a time)
	}
	t.wg.Go(func() {
		r := t.clients.do(ctx, p, node)
		t.mu.Lock()
		t.results = append(t.results, r)
		t.mu.Unlock()
	})
}

// wait waits for every request sent so far to end.
func (t *traffic) wait() { t.wg.Wait() }

// snapshot returns the results so far.
func (t *traffic) snapshot() []result {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.results)
}

// sleepUntil waits until at and reports whether it did (false: ctx ended first).
func sleepUntil(ctx context.Context, at time.Time) bool {
	return clusterenv.SleepCtx(ctx, time.Until(at))
}

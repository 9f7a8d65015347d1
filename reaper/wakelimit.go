package reaper

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reapergw/reaper/page"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/ratelimit"
)

// Wakes are not free: each starts an app on the platform, which costs money
// and capacity, and an anonymous client could wake every app of a gateway in
// a second. The wake limits bound how many wakes one client address (an IPv6
// /64 counts as one) and the whole node may start per minute
// (EngineOptions.MaxWakesPerClient, MaxWakesPerMinute). Only a request that
// makes this node ask for a wake counts: one for an app already waking, up, or
// asked for by this node a moment ago never does. A refused request starts
// nothing and is no traffic; it gets 429 and Retry-After (a browser: the
// waiting page saying so, which reloads itself once the wait is over).

// wakeClients bounds the clients the per-client limit remembers (least
// recently seen first out; one forgotten starts again with a full budget).
const wakeClients = 16384

// wakeLimits are a node's wake limits; nil limits nothing.
type wakeLimits struct {
	perClient *ratelimit.Limiter // nil: no limit per client
	perNode   *ratelimit.Limiter // nil: no limit for the node

	mu      sync.Mutex   // takes from both limiters at once, or from neither
	refused atomic.Int64 // since the last line logged
	lastLog atomic.Int64 // unix nanoseconds of the last line logged
}

// newWakeLimits returns the limits of perClient and perNode wakes a minute (0:
// no such limit), nil when both are 0.
func newWakeLimits(perClient, perNode int) *wakeLimits {
	if perClient <= 0 && perNode <= 0 {
		return nil
	}
	l := &wakeLimits{}
	if perClient > 0 {
		l.perClient = ratelimit.PerMinute(perClient, wakeClients)
	}
	if perNode > 0 {
		l.perNode = ratelimit.PerMinute(perNode, 1)
	}
	return l
}

// take counts one wake started by client at now, unless a limit refuses it:
// then it counts nothing and returns how long until the client may wake one.
func (l *wakeLimits) take(client string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var wait time.Duration
	if l.perClient != nil {
		wait = l.perClient.Wait(client, now)
	}
	if l.perNode != nil {
		wait = max(wait, l.perNode.Wait("", now))
	}
	if wait > 0 {
		return wait, true
	}
	if l.perClient != nil {
		l.perClient.Allow(client, now)
	}
	if l.perNode != nil {
		l.perNode.Allow("", now)
	}
	return 0, false
}

// askWake asks for the app's wake on behalf of a request from client for an
// app in status st. When the request would start the wake and a wake limit
// refuses it, nothing is asked and it returns how long the client must wait.
func (e *Engine) askWake(a *app, st Status, client netip.Addr, now time.Time) (time.Duration, bool) {
	l := e.wakes
	if l == nil || st == StatusWaitingForUp {
		e.asks.ask(a, now)
		return 0, false
	}
	prev, ok := e.asks.claim(a, now)
	if !ok {
		return 0, false // this node asked a moment ago: the wake is under way
	}
	key := ratelimit.Key(client)
	if wait, limited := l.take(key, now); limited {
		e.asks.unclaim(a, prev, now)
		n := l.refused.Add(1)
		if last := l.lastLog.Load(); now.UnixNano()-last >= int64(time.Minute) && l.lastLog.CompareAndSwap(last, now.UnixNano()) {
			l.refused.Add(-n)
			e.log.Warn("wakes refused by the wake limits (node.max_wakes_per_client, node.max_wakes_per_minute)",
				"client", key, "app", a.id, "refused", n, "retry_after", wait.String())
		}
		return wait, true
	}
	go e.asks.send(a, now)
	return 0, false
}

// OutcomeTooManyWakes is the outcome of a request refused by the wake limits.
const OutcomeTooManyWakes = "too_many_wakes"

// tooManyWakesAnswer is the answer to a request that a wake limit refused: 429
// with Retry-After, the built-in waiting page saying so for a browser (it
// reloads itself once the wait is over), JSON otherwise.
func (p *Plugin) tooManyWakesAnswer(ex *plugin.Exchange, k requestKind, st Status, wait time.Duration) (*plugin.Answer, error) {
	ex.Outcome = OutcomeTooManyWakes
	secs := strconv.Itoa(int((wait + time.Second - 1) / time.Second))
	if k != kindBrowser || !p.AllowWaitingPage {
		a := answer(ex, http.StatusTooManyRequests, st, map[string]any{
			"error":  "too many wake-ups were asked from your address: this application is not woken for you now, retry later",
			"status": string(st), "retry_after_seconds": int((wait + time.Second - 1) / time.Second),
		})
		a.Header.Set("Retry-After", secs)
		return a, nil
	}
	w := p.waiting(ex, st)
	w.RetryAfter = wait
	// The route's own page, if it has one, knows nothing of this: the
	// built-in page says it in the visitor's language.
	body, err := page.RenderWaiting(ex.Context(), w, ex.Request.Header.Get("Accept-Language"))
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", secs)
	h.Set(HeaderStatus, st.Marker())
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if ex.Request.Method == http.MethodHead {
		body = nil
	}
	return &plugin.Answer{Status: http.StatusTooManyRequests, Header: h, Body: body}, nil
}

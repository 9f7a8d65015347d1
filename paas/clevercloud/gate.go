package clevercloud

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas"
)

// gate slows the whole driver down when the API rate-limits it, rather than each
// app: Clever Cloud counts calls per credential, so 50 apps waking during a storm
// must not each hammer it.
//
// A rate-limit answer closes the gate until a "not before" time: the Retry-After
// the API gave, else an exponential back-off with jitter that grows with each
// rate-limit answer in a row, up to max (short: see DefaultRateLimitMax). Every
// call waits for that time (within its budget).
// Once it has passed, one call goes through alone as a probe; the others wait for
// its outcome. Any answer that is not a rate limit opens the gate fully; another
// rate limit closes it for longer.
type gate struct {
	base, max time.Duration

	mu        sync.Mutex
	notBefore time.Time
	strikes   int           // rate-limit answers in a row
	probing   bool          // a probe is in flight
	probeDone chan struct{} // closed when the probe ends
}

// outcome is what a call that went through the gate got.
type outcome int

const (
	answered outcome = iota // an HTTP answer other than a rate limit
	limited                 // a rate-limit answer
	noAnswer                // no answer (timeout, connection error, cancelled)
)

// maxRetryAfter caps a Retry-After the API might send, so a wrong header cannot
// park the driver for a day.
const maxRetryAfter = time.Hour

// enter waits until a call may go to the API, at most budget (and never past
// ctx's end). It returns the function the caller must call with the outcome. When
// the gate will not open within the budget it returns a *paas.RateLimitError at
// once, whose RetryAfter says how long the gate stays closed.
func (g *gate) enter(ctx context.Context, budget time.Duration) (release func(outcome, time.Duration), err error) {
	deadline := time.Now().Add(budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for {
		g.mu.Lock()
		now := time.Now()
		if wait := g.notBefore.Sub(now); wait > 0 {
			g.mu.Unlock()
			if now.Add(wait).After(deadline) {
				return nil, &paas.RateLimitError{RetryAfter: wait}
			}
			if !sleepCtx(ctx, wait) {
				return nil, ctx.Err()
			}
			continue
		}
		if g.strikes == 0 {
			g.mu.Unlock()
			return g.releaser(false), nil
		}
		if !g.probing {
			g.probing = true
			g.probeDone = make(chan struct{})
			g.mu.Unlock()
			return g.releaser(true), nil
		}
		done := g.probeDone
		g.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-done:
			t.Stop()
		case <-t.C:
			return nil, &paas.RateLimitError{RetryAfter: g.base}
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

func (g *gate) releaser(probe bool) func(outcome, time.Duration) {
	var once sync.Once
	return func(o outcome, retryAfter time.Duration) {
		once.Do(func() { g.release(probe, o, retryAfter) })
	}
}

func (g *gate) release(probe bool, o outcome, retryAfter time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	switch o {
	case limited:
		retryAfter = min(retryAfter, maxRetryAfter)
		if !probe && now.Before(g.notBefore) {
			// Another call of the same burst already closed the gate: one storm
			// is one strike, not one per call in flight.
			if retryAfter > 0 {
				g.notBefore = laterOf(g.notBefore, now.Add(retryAfter))
			}
			break
		}
		g.strikes++
		d := g.backoff(g.strikes)
		if retryAfter > 0 {
			// Honour the API's wait exactly, plus a little jitter so that several
			// reaper nodes do not come back at the same instant.
			d = retryAfter + rand.N(retryAfter/10+1)
		}
		g.notBefore = laterOf(g.notBefore, now.Add(d))
	case answered:
		g.strikes = 0
	}
	if probe {
		g.probing = false
		close(g.probeDone)
	}
}

// backoff is the wait after the n-th rate limit in a row: base·2ⁿ⁻¹, capped at
// max, with "equal jitter" (between half and all of it).
func (g *gate) backoff(n int) time.Duration {
	d := g.max
	if n < 31 {
		d = min(g.base<<(n-1), g.max)
	}
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// closedFor reports how long the gate stays closed from now (0 when open).
func (g *gate) closedFor() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(0, time.Until(g.notBefore))
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sleepCtx waits d or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

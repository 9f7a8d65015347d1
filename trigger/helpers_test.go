package trigger

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
)

// wakes is a hand-written Waker that records each wake asked on a channel;
// asked answers whether a wake is asked (false: the app is up already).
type wakes struct {
	ch    chan wakeCall
	mu    sync.Mutex
	asked bool
}

type wakeCall struct {
	id, by string
	at     time.Time
}

func newWakes() *wakes { return &wakes{ch: make(chan wakeCall, 100), asked: true} }

func (w *wakes) WakeFor(_ context.Context, id, by string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asked {
		w.ch <- wakeCall{id, by, time.Now()}
	}
	return w.asked, nil
}

func (w *wakes) setAsked(v bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = v
}

// next waits for the next wake, failing the test after limit.
func (w *wakes) next(t *testing.T, limit time.Duration, what string) wakeCall {
	t.Helper()
	select {
	case c := <-w.ch:
		return c
	case <-time.After(limit):
		t.Fatalf("no wake after %s: %s", limit, what)
		return wakeCall{}
	}
}

// none fails the test if a wake was asked.
func (w *wakes) none(t *testing.T, what string) {
	t.Helper()
	select {
	case c := <-w.ch:
		t.Fatalf("%s: a wake was asked: %+v", what, c)
	default:
	}
}

// counts is a hand-written Observer that counts what it is told.
type counts struct {
	mu      sync.Mutex
	checks  map[string]int // "id/result"
	fires   map[string]int
	refused map[string]int
}

func newCounts() *counts {
	return &counts{checks: map[string]int{}, fires: map[string]int{}, refused: map[string]int{}}
}

func (c *counts) TriggerChecked(id, result string) { c.add(c.checks, id+"/"+result) }
func (c *counts) TriggerFired(id string)           { c.add(c.fires, id) }
func (c *counts) TriggerRefused(reason string)     { c.add(c.refused, reason) }
func (c *counts) TriggerStopped(id string)         { c.add(c.fires, id+"/stopped") }

func (c *counts) add(m map[string]int, k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m[k]++
}

func (c *counts) check(id, result string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks[id+"/"+result]
}

func (c *counts) refusedFor(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused[reason]
}

// running is a Runner of cs, run until the test ends.
type running struct {
	*Runner
	wakes  *wakes
	counts *counts
	logs   *logtest.Buffer
}

// run runs a Runner of cs as the leader (or a single node) does: Run and
// Listen.
func run(t *testing.T, cs ...Config) *running {
	t.Helper()
	return start(t, "n1", true, cs...)
}

// follow runs a Runner of cs as a follower of a cluster named node does:
// Listen only.
func follow(t *testing.T, node string, cs ...Config) *running {
	t.Helper()
	return start(t, node, false, cs...)
}

func start(t *testing.T, node string, leads bool, cs ...Config) *running {
	t.Helper()
	rr := &running{wakes: newWakes(), counts: newCounts(), logs: &logtest.Buffer{}}
	rr.Runner = New(Options{Triggers: cs, Waker: rr.wakes, Observer: rr.counts, Logger: rr.logs.Logger(slog.LevelDebug), Node: node})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if leads {
		wg.Go(func() { rr.Run(ctx) })
	}
	wg.Go(func() { rr.Listen(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("%s's runner's log:\n%s", node, rr.logs.String())
		}
	})
	return rr
}

// awaitChecks waits until the trigger's looks with result reach n.
func (rr *running) awaitChecks(t *testing.T, id, result string, n int) {
	t.Helper()
	testwait.For(t, 20*time.Second, id+" looked "+result, func() bool { return rr.counts.check(id, result) >= n })
}

package forwardauth

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// holdContext is an auth call's context bounded by auth_hold_max, whose timer
// starts only when something waits on it (Done). An awake app's call never
// waits: context.WithTimeout's timer and its registration with the parent were
// a tenth of such a call's cost in reaper, for a deadline nobody watched.
//
// It keeps the context contract: Err is nil until Done is closed, then not
// nil. Err finds the end itself (the parent's, the deadline, or release) and
// closes Done before it reports it, so that a caller that checks Err without
// waiting never sees an end that Done does not show yet.
type holdContext struct {
	context.Context // the auth call's
	deadline        time.Time

	released atomic.Bool // the call is answered

	mu     sync.Mutex
	done   chan struct{} // nil until Done is first called or Err sees the end
	closed bool          // done is closed
	timer  *time.Timer
	stop   func() bool // ends the wait on the parent
}

func newHoldContext(parent context.Context, d time.Duration) *holdContext {
	c := &holdContext{}
	c.init(parent, d)
	return c
}

// init readies a zero holdContext (one embedded in a larger value).
func (c *holdContext) init(parent context.Context, d time.Duration) {
	c.Context, c.deadline = parent, time.Now().Add(d)
}

func (c *holdContext) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Err reports why the context ended: the parent's error, context.Canceled
// once the call is answered, or context.DeadlineExceeded. A live call's Err
// takes no lock. Each end is for good, so once Done is closed Err is not nil.
func (c *holdContext) Err() error {
	if !c.released.Load() && c.Context.Err() == nil && time.Now().Before(c.deadline) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.released.Load() {
		return context.Canceled
	}
	return context.DeadlineExceeded
}

// Done starts the timer on its first call.
func (c *holdContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.released.Load() || c.Context.Err() != nil || !time.Now().Before(c.deadline) {
		c.closeLocked()
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), c.closeIfDue)
	c.stop = context.AfterFunc(c.Context, c.close)
	return c.done
}

// closeIfDue is the timer's: it closes Done at the deadline, as Err reads the
// clock (should the timer fire a moment early, it waits the rest).
func (c *holdContext) closeIfDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if left := time.Until(c.deadline); left > 0 && !c.closed {
		c.timer.Reset(left)
		return
	}
	c.closeLocked()
}

func (c *holdContext) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

// closeLocked closes Done, once, making it if nobody asked for it yet, and
// stops the timer and the wait on the parent.
func (c *holdContext) closeLocked() {
	if c.closed {
		return
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	close(c.done)
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
		c.stop()
	}
}

// release ends the context once the call is answered: Err says
// context.Canceled and Done is closed (now if anyone holds it, else when
// asked); no timer is left.
func (c *holdContext) release() {
	c.released.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		c.closeLocked()
	}
}

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
// Err reports the deadline as soon as it has passed, even before Done is
// closed (or asked for), and context.Canceled once the call is answered
// (release); once Done is closed, Err is not nil.
type holdContext struct {
	context.Context // the auth call's
	deadline        time.Time

	released atomic.Bool

	mu    sync.Mutex
	done  chan struct{} // nil until Done is first called
	timer *time.Timer
	stop  func() bool // ends the wait on the parent
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

func (c *holdContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.released.Load() {
		return context.Canceled
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Done starts the timer on its first call.
func (c *holdContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.released.Load() {
		close(c.done) // the call is over: nothing may wait on it any more
		return c.done
	}
	var once sync.Once
	closeDone := func() { once.Do(func() { close(c.done) }) }
	c.timer = time.AfterFunc(time.Until(c.deadline), closeDone)
	c.stop = context.AfterFunc(c.Context, closeDone)
	return c.done
}

// release ends the context's timer, if it was started, once the call is
// answered.
func (c *holdContext) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released.Store(true)
	if c.timer != nil {
		c.timer.Stop()
		c.stop()
	}
}

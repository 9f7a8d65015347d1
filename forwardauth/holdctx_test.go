package forwardauth

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// The deadline ends the context when something waits on it: Done closes at
// the deadline and Err says so; before, Err is nil.
func TestHoldContext_DeadlineClosesDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHoldContext(context.Background(), 5*time.Second)
		defer c.release()
		if d, ok := c.Deadline(); !ok || !d.Equal(time.Now().Add(5*time.Second)) {
			t.Errorf("deadline %v %v", d, ok)
		}
		done := c.Done()
		time.Sleep(4 * time.Second) // synctest's clock: no real wait
		select {
		case <-done:
			t.Fatal("closed before the deadline")
		default:
		}
		if c.Err() != nil {
			t.Fatalf("Err %v before the deadline", c.Err())
		}
		<-done
		if !errors.Is(c.Err(), context.DeadlineExceeded) || time.Now().Before(c.deadline) {
			t.Errorf("at %v: Err %v, want the deadline's", time.Now(), c.Err())
		}
	})
}

// The parent's end ends it, with the parent's error; a parent's earlier
// deadline is its deadline.
func TestHoldContext_ParentEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c := newHoldContext(parent, time.Minute)
		defer c.release()
		if d, _ := c.Deadline(); !d.Equal(time.Now().Add(time.Second)) {
			t.Errorf("deadline %v, want the parent's", d)
		}
		cancel()
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err %v, want the parent's", c.Err())
		}
	})
}

// Past the deadline Err says so even when nothing waited; once released,
// Done (asked late) is closed and Err not nil; no timer outlives release
// (synctest.Test fails on a goroutine or timer left behind).
func TestHoldContext_NoWaiterNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHoldContext(context.Background(), time.Second)
		time.Sleep(2 * time.Second)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("Err %v past the deadline", c.Err())
		}
		c.release()
		<-c.Done()
		if c.Err() == nil {
			t.Error("Done closed, Err nil")
		}
		started := newHoldContext(context.Background(), time.Hour)
		_ = started.Done()
		started.release()
		synctest.Wait()
	})
}

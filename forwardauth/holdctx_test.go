package forwardauth

import (
	"context"
	"errors"
	"fmt"
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

// The context contract, for each way the context ends and whether Done was
// asked for before: once Err is not nil, Done is closed at once (no wait for
// a timer or a goroutine), and a Done asked for before the end is closed by
// it. Before its end, Err is nil and Done open.
func TestHoldContext_ErrOnlyOnceDoneIsClosed(t *testing.T) {
	ends := []struct {
		name string
		end  func(c *holdContext, cancelParent context.CancelFunc)
		want error
	}{
		{"release", func(c *holdContext, _ context.CancelFunc) { c.release() }, context.Canceled},
		{"parent", func(_ *holdContext, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"deadline", func(*holdContext, context.CancelFunc) { time.Sleep(2 * time.Second) }, context.DeadlineExceeded},
	}
	for _, end := range ends {
		for _, askedBefore := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/done asked before: %v", end.name, askedBefore), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					parent, cancel := context.WithCancel(context.Background())
					defer cancel()
					c := newHoldContext(parent, time.Second)
					defer c.release()
					var done <-chan struct{}
					if askedBefore {
						done = c.Done()
						if isClosed(done) || c.Err() != nil {
							t.Fatalf("ended before its end: Err %v", c.Err())
						}
					}
					end.end(c, cancel)
					if askedBefore {
						synctest.Wait() // the parent's AfterFunc runs in a goroutine of its own
						if !isClosed(done) {
							t.Fatal("Done asked before the end is still open after it")
						}
					}
					err := c.Err()
					if !errors.Is(err, end.want) {
						t.Fatalf("Err %v, want %v", err, end.want)
					}
					if !isClosed(c.Done()) {
						t.Fatal("Err not nil while Done is open")
					}
				})
			})
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

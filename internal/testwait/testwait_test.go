package testwait

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestFor_ReturnsOnceTheConditionHolds(t *testing.T) {
	var done atomic.Bool
	time.AfterFunc(20*time.Millisecond, func() { done.Store(true) })
	start := time.Now()
	For(t, 5*time.Second, "the flag", done.Load)
	if took := time.Since(start); took > time.Second {
		t.Errorf("For returned %v after the condition held, want a few milliseconds", took-20*time.Millisecond)
	}
}

func TestFor_FailsTheTestWithWhatItAwaited(t *testing.T) {
	ft := &fakeTB{TB: t}
	calls := 0
	start := time.Now()
	For(ft, 30*time.Millisecond, "the moon", func() bool { calls++; return false })
	took := time.Since(start)
	if want := "timed out after 30ms: waiting for the moon"; ft.fatal != want {
		t.Errorf("failure %q, want %q", ft.fatal, want)
	}
	if !ft.helper {
		t.Error("For did not call t.Helper")
	}
	if took < 30*time.Millisecond || took > time.Second {
		t.Errorf("For gave up after %v, want 30ms", took)
	}
	// 1+2+4+8+10+… ms: a few polls, not a spin and not a single one.
	if calls < 2 || calls > 30 {
		t.Errorf("cond called %d times in 30ms", calls)
	}
}

func TestUntil(t *testing.T) {
	n := 0
	if !Until(5*time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Until stopped after %d calls, want true after 3", n)
	}
	n = 0
	if Until(0, func() bool { n++; return false }) || n != 1 {
		t.Errorf("Until(0) called cond %d times, want false after 1", n)
	}
	if !Until(0, func() bool { return true }) {
		t.Error("Until(0) = false for a condition that holds")
	}
}

// fakeTB records a failure instead of ending the test.
type fakeTB struct {
	testing.TB
	helper bool
	fatal  string
}

func (f *fakeTB) Helper() { f.helper = true }

func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

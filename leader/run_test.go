package leader

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// These tests drive Run through the leadership publisher alone, without Raft, inside a synctest bubble:
// synctest.Wait returns once every goroutine is blocked, so "not called" is checked without waiting.

func newRunOnlyNode() *Node {
	return &Node{lead: newLeadership(), runSem: make(chan struct{}, 1)}
}

// runProbe is a whileLeader whose calls the test releases one by one.
type runProbe struct {
	mu      sync.Mutex
	calls   []*probeCall
	active  atomic.Int32
	overlap atomic.Bool
	// ignoreCtx makes calls wait for release instead of returning when their context ends.
	ignoreCtx bool
}

type probeCall struct {
	term     uint64
	ctx      context.Context
	release  chan struct{}
	returned chan struct{}
}

func (p *runProbe) whileLeader(ctx context.Context, term uint64) {
	if p.active.Add(1) > 1 {
		p.overlap.Store(true)
	}
	defer p.active.Add(-1)
	c := &probeCall{term: term, ctx: ctx, release: make(chan struct{}), returned: make(chan struct{})}
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
	defer close(c.returned)
	if p.ignoreCtx {
		<-c.release
		return
	}
	select {
	case <-ctx.Done():
	case <-c.release:
	}
}

func (p *runProbe) all() []*probeCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*probeCall(nil), p.calls...)
}

func (p *runProbe) wantCalls(t *testing.T, terms ...uint64) []*probeCall {
	t.Helper()
	calls := p.all()
	if len(calls) != len(terms) {
		t.Fatalf("whileLeader called %d times, want %d (terms %v)", len(calls), len(terms), terms)
	}
	for i, c := range calls {
		if c.term != terms[i] {
			t.Fatalf("call %d got term %d, want %d", i, c.term, terms[i])
		}
	}
	return calls
}

// startRun runs n.Run in the bubble and returns a channel closed when it returns.
func startRun(ctx context.Context, n *Node, fn func(context.Context, uint64)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Run(ctx, fn)
	}()
	return done
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestRun_CallsOncePerTenureAfterBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRunOnlyNode()
		p := &runProbe{}
		ctx, cancel := context.WithCancel(t.Context())
		done := startRun(ctx, n, p.whileLeader)

		t1 := n.lead.gain(5)
		synctest.Wait()
		p.wantCalls(t) // not before the barrier
		n.lead.markReady(t1)
		synctest.Wait()
		c := p.wantCalls(t, 5)[0]
		if c.ctx.Err() != nil {
			t.Fatal("context cancelled while leader")
		}

		close(c.release) // returns early: not called again in the same tenure
		synctest.Wait()
		p.wantCalls(t, 5)

		n.lead.lose()
		t2 := n.lead.gain(9)
		n.lead.markReady(t2)
		synctest.Wait()
		c = p.wantCalls(t, 5, 9)[1]

		n.lead.lose()
		synctest.Wait()
		if c.ctx.Err() == nil || !isClosed(c.returned) {
			t.Fatal("losing leadership did not cancel and end the call")
		}
		cancel()
		<-done
	})
}

func TestRun_NeverStartsBeforePreviousCallReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRunOnlyNode()
		p := &runProbe{ignoreCtx: true}
		ctx, cancel := context.WithCancel(t.Context())
		done := startRun(ctx, n, p.whileLeader)

		n.lead.markReady(n.lead.gain(1))
		synctest.Wait()
		first := p.wantCalls(t, 1)[0]

		// Leadership lost and won again while the first call ignores its cancelled context.
		n.lead.lose()
		n.lead.markReady(n.lead.gain(2))
		synctest.Wait()
		if first.ctx.Err() == nil {
			t.Fatal("first call's context not cancelled on leadership loss")
		}
		p.wantCalls(t, 1)

		close(first.release)
		synctest.Wait()
		second := p.wantCalls(t, 1, 2)[1]
		if p.overlap.Load() {
			t.Fatal("two calls ran at once")
		}
		cancel()
		synctest.Wait()
		if isClosed(done) {
			t.Fatal("Run returned before whileLeader did")
		}
		close(second.release)
		<-done
	})
}

func TestRun_ReturnsWhenContextEndsAndCallReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRunOnlyNode()
		p := &runProbe{ignoreCtx: true}
		ctx, cancel := context.WithCancel(t.Context())
		done := startRun(ctx, n, p.whileLeader)
		n.lead.markReady(n.lead.gain(3))
		synctest.Wait()
		c := p.wantCalls(t, 3)[0]

		cancel()
		synctest.Wait()
		if c.ctx.Err() == nil {
			t.Fatal("call's context not cancelled with Run's")
		}
		if isClosed(done) {
			t.Fatal("Run returned while whileLeader was still running")
		}
		close(c.release)
		synctest.Wait()
		if !isClosed(done) {
			t.Fatal("Run did not return after whileLeader returned")
		}
	})
}

func TestRun_ReturnsOnShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRunOnlyNode()
		p := &runProbe{}
		done := startRun(t.Context(), n, p.whileLeader)
		n.lead.markReady(n.lead.gain(4))
		synctest.Wait()
		c := p.wantCalls(t, 4)[0]
		n.lead.close()
		synctest.Wait()
		if c.ctx.Err() == nil || !isClosed(done) {
			t.Fatal("close did not cancel the call and end Run")
		}
		if n.lead.gain(5) != nil {
			t.Fatal("gain after close started a tenure")
		}
	})
}

func TestRun_IgnoresTenureLostBeforeBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRunOnlyNode()
		p := &runProbe{}
		ctx, cancel := context.WithCancel(t.Context())
		done := startRun(ctx, n, p.whileLeader)
		t1 := n.lead.gain(6)
		n.lead.lose()
		n.lead.markReady(t1)
		synctest.Wait()
		p.wantCalls(t)
		cancel()
		<-done
	})
}

func TestRun_ConcurrentRunsAreSerialised(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRunOnlyNode()
		p := &runProbe{}
		ctx1, cancel1 := context.WithCancel(t.Context())
		ctx2, cancel2 := context.WithCancel(t.Context())
		done1 := startRun(ctx1, n, p.whileLeader)
		synctest.Wait()
		done2 := startRun(ctx2, n, p.whileLeader)
		n.lead.markReady(n.lead.gain(7))
		synctest.Wait()
		first := p.wantCalls(t, 7)[0]

		// The first Run ends; the second takes over the current tenure, after the first call returned.
		cancel1()
		<-done1
		synctest.Wait()
		if !isClosed(first.returned) {
			t.Fatal("first call still running")
		}
		p.wantCalls(t, 7, 7)
		if p.overlap.Load() {
			t.Fatal("two calls ran at once")
		}
		cancel2()
		<-done2
	})
}

func TestRun_StartsLateDuringTenure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRunOnlyNode()
		p := &runProbe{}
		n.lead.markReady(n.lead.gain(8))
		ctx, cancel := context.WithCancel(t.Context())
		done := startRun(ctx, n, p.whileLeader)
		synctest.Wait()
		p.wantCalls(t, 8)
		cancel()
		<-done
	})
}

package leader

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"
)

// tenure is one period during which this node is the Raft leader.
type tenure struct {
	term   uint64          // the term this node won
	ctx    context.Context // cancelled the moment the tenure ends (leadership lost or node shut down)
	cancel context.CancelFunc
	ready  chan struct{} // closed once a barrier committed in this term: a quorum follows us
}

// leadership publishes the current tenure to Run. Every change closes the changed channel and makes a new
// one, so any number of waiters are released at once without a send that could block.
type leadership struct {
	mu      sync.Mutex
	cur     *tenure // nil while not leader
	changed chan struct{}
	closed  bool
}

func newLeadership() *leadership {
	return &leadership{changed: make(chan struct{})}
}

// state returns the current tenure (nil when not leader), a channel closed at the next change, and whether
// the node is shut down.
func (l *leadership) state() (*tenure, <-chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur, l.changed, l.closed
}

// gain starts a tenure for term, ending any previous one first. It returns nil once closed.
func (l *leadership) gain(term uint64) *tenure {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.endLocked()
	ctx, cancel := context.WithCancel(context.Background())
	l.cur = &tenure{term: term, ctx: ctx, cancel: cancel, ready: make(chan struct{})}
	l.notifyLocked()
	return l.cur
}

// markReady releases Run to call whileLeader for t. Called once per tenure.
func (l *leadership) markReady(t *tenure) {
	close(t.ready)
}

// lose ends the current tenure, if any. Idempotent.
func (l *leadership) lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.endLocked()
		l.notifyLocked()
	}
}

// close ends the current tenure for good: later gains are ignored. Idempotent.
func (l *leadership) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.endLocked()
		l.closed = true
		l.notifyLocked()
	}
}

func (l *leadership) endLocked() {
	if l.cur != nil {
		l.cur.cancel()
		l.cur = nil
	}
}

func (l *leadership) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Run blocks until ctx ends or the node is shut down, and returns only after the last whileLeader call has
// returned.
//
// Each time this node becomes leader, once a barrier has committed in the new term (so a quorum follows it),
// Run calls whileLeader in a new goroutine with the term it won and a context that is cancelled the moment
// leadership is lost, the node shuts down or ctx ends. whileLeader should return promptly when its context
// ends; Run never starts a second call before the previous one has returned, even across tenures, and calls
// it at most once per tenure (if it returns early, it is called again only after the next election won).
// Records that whileLeader writes should carry term: a deposed leader's writes then lose to the new one's.
//
// Calls of Run on one node are serialised: a second call waits for the first to return (or for its own ctx).
// Leadership is observed through Raft's NotifyCh, drained by the node from New to Shutdown, so raft never
// blocks on it and Run may start late without missing the current tenure.
func (n *Node) Run(ctx context.Context, whileLeader func(ctx context.Context, term uint64)) {
	select {
	case n.runSem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-n.runSem }()

	var (
		ran  *tenure            // the tenure whileLeader was last called for
		done chan struct{}      // closed when the running call returns; nil when none runs
		stop context.CancelFunc // cancels the running call's context
	)
	finish := func() {
		if done != nil {
			stop()
			<-done
			done = nil
		}
	}
	defer finish()

	for {
		cur, changed, closed := n.lead.state()
		if closed {
			return
		}
		if done != nil && ran != cur {
			finish() // the call's context is already cancelled by the tenure's end; wait for it to return
			continue
		}
		var ready <-chan struct{}
		if cur != nil && cur != ran && done == nil {
			ready = cur.ready
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-done: // whileLeader returned on its own; not called again in this tenure
			stop()
			done = nil
		case <-ready:
			ran = cur
			if cur.ctx.Err() != nil {
				continue // lost between the barrier and now
			}
			callCtx, cancel := context.WithCancel(ctx)
			unhook := context.AfterFunc(cur.ctx, cancel)
			stop = func() { unhook(); cancel() }
			d := make(chan struct{})
			done = d
			go func(term uint64) {
				defer close(d)
				whileLeader(callCtx, term)
			}(cur.term)
		}
	}
}

// watch drains Raft's NotifyCh from New until Shutdown and turns it into tenures. Raft blocks on NotifyCh
// when its buffer is full, so nothing else may be done here that waits on Raft.
func (n *Node) watch() {
	defer close(n.watchDone)
	for {
		select {
		case won := <-n.notifyCh:
			if won {
				n.gained()
			} else {
				n.lead.lose()
			}
		case <-n.stopWatch:
			n.lead.close()
			return
		}
	}
}

// gained starts a tenure for the term this node won, if it is still leader in it.
func (n *Node) gained() {
	term, ok := n.leaderTerm()
	if !ok {
		// Leadership is already gone again: the matching false is queued behind this true.
		n.lead.lose()
		return
	}
	t := n.lead.gain(term)
	if t == nil {
		return
	}
	n.log.Info("leader: this node is the leader", "term", term)
	n.bg.Add(1)
	go n.establish(t)
}

// leaderTerm returns the term this node leads in. A leader's term cannot change while it stays leader, so a
// term read equal before and after a state read of Leader is the term of this leadership. It gives up (false)
// when raft keeps changing term under it, in which case more notifications are queued.
func (n *Node) leaderTerm() (uint64, bool) {
	for range 8 {
		before := n.raft.CurrentTerm()
		state := n.raft.State()
		if n.raft.CurrentTerm() == before {
			return before, state == raft.Leader
		}
	}
	return 0, false
}

// establish waits for a barrier in t's term, which commits only once a quorum follows this leader, then lets
// Run call whileLeader and copies missing API addresses into the log.
func (n *Node) establish(t *tenure) {
	defer n.bg.Done()
	if err := waitFuture(t.ctx, n.raft.Barrier(0)); err != nil {
		if t.ctx.Err() == nil {
			n.log.Warn("leader: barrier failed after winning leadership", "term", t.term, "error", err)
		}
		return
	}
	n.lead.markReady(t)
	n.reconcile(t.ctx)
}

package leader

import (
	"sync"
	"time"
)

// maxNonces bounds the nonces a node remembers: far more internal calls than
// a cluster makes in SignatureWindow (wake asks are coalesced, reads are a
// few a second), at about 100 bytes each.
const maxNonces = 1 << 15

// nonces remembers the nonces of the internal calls a node took, so that each
// is taken once. A nonce only needs remembering while its call's signed time
// is within SignatureWindow: past it, the signature is refused anyway. The
// memory is bounded: when maxNonces calls within the window were taken, the
// oldest nonce is forgotten and every call signed at or before its time is
// refused from then on (floor), since its nonce might be one forgotten. Under
// such a flood a late call may be refused; a replay never goes through. Safe
// for concurrent use.
type nonces struct {
	cap int

	mu    sync.Mutex
	seen  map[string]struct{}
	order []signed // in the order taken; order[head:] are in seen
	head  int
	floor time.Time
}

func newNonces(capacity int) *nonces {
	return &nonces{cap: capacity, seen: map[string]struct{}{}}
}

// first records the nonce of a call whose signature is valid at now, and
// reports whether it is the first time: false for a replay, and for a call
// signed at or before the floor.
func (n *nonces) first(s signed, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !s.at.After(n.floor) {
		return false
	}
	if _, ok := n.seen[s.nonce]; ok {
		return false
	}
	// Forget the nonces whose calls are out of the window now, from the oldest
	// taken (a later one out of the window waits for its turn: it is bounded).
	for n.head < len(n.order) && now.Sub(n.order[n.head].at) > SignatureWindow {
		n.pop()
	}
	if len(n.order)-n.head >= n.cap {
		if old := n.pop(); old.at.After(n.floor) {
			n.floor = old.at
		}
	}
	if n.head > len(n.order)/2 && n.head > 64 {
		n.order = append(n.order[:0], n.order[n.head:]...)
		n.head = 0
	}
	n.seen[s.nonce] = struct{}{}
	n.order = append(n.order, s)
	return true
}

func (n *nonces) pop() signed {
	s := n.order[n.head]
	n.order[n.head] = signed{}
	n.head++
	delete(n.seen, s.nonce)
	return s
}

// len is how many nonces are remembered.
func (n *nonces) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.seen)
}

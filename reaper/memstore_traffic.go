package reaper

import (
	"context"
	"time"
)

type memInFlight struct {
	counts  map[string]int
	expires time.Time
}

// TouchAccess implements TrafficStore. Times are compared on the wall clock, as
// they will be after a restart.
//
// An access time that moves more than the save interval past the one the state
// file holds is saved soon, not at the next periodic save: the first request
// after a quiet time moves an idle clock by all that time, and a crash (SIGKILL,
// power loss) before the periodic save would give the app back its old clock, and
// put it to sleep as much earlier than its grace period says (up to the whole
// grace period). So a crash costs an idle clock at most the save interval.
func (s *MemStore) TouchAccess(ctx context.Context, access map[string]time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	soon := false
	s.mu.Lock()
	for app, at := range access {
		at = at.Round(0)
		if old, ok := s.access[app]; !ok || at.After(old) {
			s.access[app] = at
			s.gen++
			if at.Sub(s.savedAccess[app]) > s.interval {
				soon = true
			}
		}
	}
	s.mu.Unlock()
	if soon {
		s.saveSoon()
	}
	return nil
}

// LastAccess implements TrafficStore.
func (s *MemStore) LastAccess(ctx context.Context) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	out := make(map[string]time.Time, len(s.access))
	for app, at := range s.access {
		out[app] = at
	}
	s.mu.Unlock()
	return out, nil
}

// SetInFlight implements TrafficStore. A ttl of 0 or less removes the node's counts.
func (s *MemStore) SetInFlight(ctx context.Context, node string, counts map[string]int, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := make(map[string]int, len(counts))
	for app, n := range counts {
		if n != 0 {
			c[app] = n
		}
	}
	expires := time.Now().Add(ttl)
	s.mu.Lock()
	if ttl <= 0 || len(c) == 0 {
		delete(s.inflight, node)
	} else {
		s.inflight[node] = memInFlight{counts: c, expires: expires}
	}
	s.mu.Unlock()
	return nil
}

// InFlight implements TrafficStore; apps with no live count are absent.
func (s *MemStore) InFlight(ctx context.Context) (map[string]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	out := map[string]int{}
	s.mu.Lock()
	for node, f := range s.inflight {
		if !now.Before(f.expires) {
			delete(s.inflight, node) // a dead node's counts: expired for good
			continue
		}
		for app, n := range f.counts {
			out[app] += n
		}
	}
	s.mu.Unlock()
	return out, nil
}

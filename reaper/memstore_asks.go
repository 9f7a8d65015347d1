package reaper

import (
	"context"
	"time"
)

type memAsk struct {
	at, expires time.Time
}

// AskWake implements AskStore. An ask whose time is not later than the stored one
// keeps the stored time, but still keeps the ask alive for ttl from now.
func (s *MemStore) AskWake(ctx context.Context, appID string, at time.Time, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	at = at.Round(0)
	now := time.Now()
	expires := now.Add(ttl)
	s.mu.Lock()
	if old, ok := s.asks[appID]; ok && now.Before(old.expires) {
		if old.at.After(at) {
			at = old.at
		}
		if old.expires.After(expires) {
			expires = old.expires
		}
	}
	if now.Before(expires) {
		s.asks[appID] = memAsk{at: at, expires: expires}
		s.gen++
	}
	s.mu.Unlock()
	return nil
}

// WakeAsks implements AskStore; expired asks are left out (and forgotten).
func (s *MemStore) WakeAsks(ctx context.Context) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	out := map[string]time.Time{}
	s.mu.Lock()
	for app, a := range s.asks {
		if !now.Before(a.expires) {
			delete(s.asks, app)
			continue
		}
		out[app] = a.at
	}
	s.mu.Unlock()
	return out, nil
}

// ClearWake implements AskStore.
func (s *MemStore) ClearWake(ctx context.Context, appID string, upTo time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if a, ok := s.asks[appID]; ok && !a.at.After(upTo.Round(0)) {
		delete(s.asks, appID)
		s.gen++
	}
	s.mu.Unlock()
	return nil
}

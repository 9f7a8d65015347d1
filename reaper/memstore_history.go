package reaper

import "context"

// appendHistoryLocked adds t to its app's history, dropping the oldest entries
// past HistoryCap. s.mu is held.
func (s *MemStore) appendHistoryLocked(t Transition) {
	h := append(s.history[t.AppID], t)
	if len(h) > HistoryCap {
		// Reslicing never writes to the shared backing array, so a snapshot taken
		// earlier stays valid; append reallocates once the front is used up.
		h = h[len(h)-HistoryCap:]
	}
	s.history[t.AppID] = h
}

// AddEvent implements HistoryStore. The entry is saved to the state file within a
// moment, in the background.
func (s *MemStore) AddEvent(ctx context.Context, t Transition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.appendHistoryLocked(t)
	s.gen++
	s.mu.Unlock()
	s.saveSoon()
	return nil
}

// History implements HistoryStore. A negative offset counts as 0; a limit of 0 or
// less returns everything from offset.
func (s *MemStore) History(ctx context.Context, appID string, offset, limit int) ([]Transition, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	offset = max(offset, 0)
	s.mu.Lock()
	h := s.history[appID]
	total := len(h)
	n := max(total-offset, 0)
	if limit > 0 {
		n = min(n, limit)
	}
	page := make([]Transition, n)
	for i := range page {
		page[i] = h[total-1-offset-i]
	}
	s.mu.Unlock()
	return page, total, nil
}

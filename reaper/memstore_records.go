package reaper

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Record implements RecordStore.
func (s *MemStore) Record(ctx context.Context, appID string) (Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, false, err
	}
	s.mu.Lock()
	rec, ok := s.records[appID]
	s.mu.Unlock()
	return rec, ok, nil
}

// Records implements RecordStore; the records come sorted by app id.
func (s *MemStore) Records(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	out := make([]Record, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, r)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.AppID, b.AppID) })
	return out, nil
}

// PutRecord implements RecordStore. A change of status (or a new record) is saved
// to the state file within a moment, in the background, with its history entry;
// watchers are told after the record is stored, without waiting for them.
func (s *MemStore) PutRecord(ctx context.Context, rec Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	old, ok := s.records[rec.AppID]
	if ok && old.Term > rec.Term {
		s.mu.Unlock()
		return fmt.Errorf("%w: app %s: stored term %d, given %d", ErrStaleTerm, rec.AppID, old.Term, rec.Term)
	}
	from := old.Status
	if !ok {
		from = StatusWaitingForInit
	}
	s.records[rec.AppID] = rec
	if from != rec.Status {
		s.appendHistoryLocked(Transition{AppID: rec.AppID, From: from, To: rec.Status, Cause: rec.Cause, At: rec.LastStatusUpdate,
			Phases: UpPhases(from, rec)})
	}
	s.gen++
	s.mu.Unlock()

	if !ok || from != rec.Status {
		s.saveSoon()
	}
	s.watchers.Notify(rec.AppID)
	return nil
}

// DeleteRecord implements RecordStore. It removes the record only: the app's
// history, access time and ask stay. Deleting an unknown app is not an error.
func (s *MemStore) DeleteRecord(ctx context.Context, appID string, term uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	old, ok := s.records[appID]
	if !ok {
		s.mu.Unlock()
		return nil
	}
	if old.Term > term {
		s.mu.Unlock()
		return fmt.Errorf("%w: app %s: stored term %d, given %d", ErrStaleTerm, appID, old.Term, term)
	}
	delete(s.records, appID)
	s.gen++
	s.mu.Unlock()

	s.saveSoon()
	s.watchers.Notify(appID)
	return nil
}

// Settings implements SettingsStore; a new store has the zero Settings.
func (s *MemStore) Settings(ctx context.Context) (Settings, error) {
	if err := ctx.Err(); err != nil {
		return Settings{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings, nil
}

// PutSettings implements SettingsStore; the change is saved in the background.
func (s *MemStore) PutSettings(ctx context.Context, set Settings) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.settings = set
	s.gen++
	s.mu.Unlock()
	s.saveSoon()
	return nil
}

package reaper

import "context"

// Watch implements RecordWatcher. It registers changed and returns at once; changed
// is then called, from one goroutine per watcher, with the id of each app whose
// record was put or deleted, until ctx ends.
//
// A slow callback never stalls PutRecord: ids wait in a per-watcher set, so a burst
// of changes to one app while the callback runs makes one call, not one per change
// (callers re-read the record anyway). The set holds at most one entry per app, and
// at most MaxWatchPending entries, so memory stays bounded (see Watchers).
func (s *MemStore) Watch(ctx context.Context, changed func(appID string)) {
	s.watchers.Add(ctx, changed)
}

package reaper

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemStoreOptions configures NewMemStore.
type MemStoreOptions struct {
	// Path is the state file, e.g. <data_dir>/state.json. Empty keeps everything in
	// memory only (tests).
	Path string
	// Interval is the period of the background save done by Run; default 15 s.
	Interval time.Duration
	// Logger receives load and save problems; default: discard.
	Logger *slog.Logger
}

// DefaultSaveInterval is the period of Run's saves when MemStoreOptions.Interval is
// not set.
const DefaultSaveInterval = 15 * time.Second

// MemStore is the Store of a single node: everything lives in memory behind one
// mutex and is written to a state file (see statefile.go), so that a restart keeps
// every record, clock, ask and setting. Locks and in-flight counts are not saved:
// they describe live processes, which a restart ends.
//
// All methods are safe for concurrent use and return ctx.Err() when called with a
// context that has already ended. Apart from Run and Close, none waits on I/O:
// saves happen in the background.
type MemStore struct {
	path     string
	interval time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	records  map[string]Record
	history  map[string][]Transition // oldest first; never modified in place (see snapshotLocked)
	access   map[string]time.Time
	asks     map[string]memAsk
	inflight map[string]memInFlight // by node
	locks    map[string]memLockEntry
	settings Settings
	watchers []*memWatcher // copy-on-write: PutRecord reads it under mu, calls outside
	gen      uint64        // bumped by every change that the state file holds

	persister // statefile.go
}

var (
	_ Store         = (*MemStore)(nil)
	_ RecordWatcher = (*MemStore)(nil)
)

type memAsk struct {
	at, expires time.Time
}

type memInFlight struct {
	counts  map[string]int
	expires time.Time
}

type memLockEntry struct {
	token   string
	expires time.Time
}

// NewMemStore returns a store loaded from opts.Path when that file exists. A state
// file that cannot be read or parsed is logged at Error, renamed aside to
// <path>.corrupt-<unix time> and the store starts empty: a bad file never stops the
// node. The only error is a state directory that cannot be created.
//
// With a Path, the store saves in a background goroutine after each transition;
// call Run for the periodic saves and Close at shutdown for the final one.
func NewMemStore(opts MemStoreOptions) (*MemStore, error) {
	s := &MemStore{
		path:     opts.Path,
		interval: opts.Interval,
		log:      opts.Logger,
		records:  map[string]Record{},
		history:  map[string][]Transition{},
		access:   map[string]time.Time{},
		asks:     map[string]memAsk{},
		inflight: map[string]memInFlight{},
		locks:    map[string]memLockEntry{},
	}
	if s.interval <= 0 {
		s.interval = DefaultSaveInterval
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.persister = newPersister()
	if s.path == "" {
		close(s.writerDone)
		return s, nil
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return nil, fmt.Errorf("reaper: state directory: %w", err)
	}
	s.load(time.Now())
	go s.writeLoop()
	return s, nil
}

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
// to the state file within a moment, in the background; watchers are told after
// the record is stored, without waiting for them.
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
	s.records[rec.AppID] = rec
	s.gen++
	watchers := s.watchers
	s.mu.Unlock()

	if !ok || old.Status != rec.Status {
		s.saveSoon()
	}
	notify(watchers, rec.AppID)
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
	watchers := s.watchers
	s.mu.Unlock()

	s.saveSoon()
	notify(watchers, appID)
	return nil
}

// AppendHistory implements HistoryStore; the entry is saved in the background like
// a transition.
func (s *MemStore) AppendHistory(ctx context.Context, t Transition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	h := append(s.history[t.AppID], t)
	if len(h) > HistoryCap {
		// Reslicing never writes to the shared backing array, so a snapshot taken
		// earlier stays valid; append reallocates once the front is used up.
		h = h[len(h)-HistoryCap:]
	}
	s.history[t.AppID] = h
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

// TouchAccess implements TrafficStore. Times are compared on the wall clock, as
// they will be after a restart.
func (s *MemStore) TouchAccess(ctx context.Context, access map[string]time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	for app, at := range access {
		at = at.Round(0)
		if old, ok := s.access[app]; !ok || at.After(old) {
			s.access[app] = at
			s.gen++
		}
	}
	s.mu.Unlock()
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

// Lock implements Locker. It never waits; a ttl of 0 or less is refused.
func (s *MemStore) Lock(ctx context.Context, appID string, ttl time.Duration) (Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("reaper: lock %s: ttl %v is not positive", appID, ttl)
	}
	token := rand.Text() // 128 random bits: a lost holder can never match a new one
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.locks[appID]; ok && now.Before(l.expires) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, appID)
	}
	s.locks[appID] = memLockEntry{token: token, expires: now.Add(ttl)}
	return &memLock{s: s, app: appID, token: token}, nil
}

// memLock is a lock handed out by MemStore.Lock.
type memLock struct {
	s     *MemStore
	app   string
	token string
}

// Extend implements Lock.
func (l *memLock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	e, ok := l.s.locks[l.app]
	if !ok || e.token != l.token || !now.Before(e.expires) {
		return fmt.Errorf("%w: %s", ErrLockLost, l.app)
	}
	e.expires = now.Add(ttl)
	l.s.locks[l.app] = e
	return nil
}

// Release implements Lock; it is idempotent.
func (l *memLock) Release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.s.mu.Lock()
	if e, ok := l.s.locks[l.app]; ok && e.token == l.token {
		delete(l.s.locks, l.app)
	}
	l.s.mu.Unlock()
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

// Watch implements RecordWatcher. It registers changed and returns at once; changed
// is then called, from one goroutine per watcher, with the id of each app whose
// record was put or deleted, until ctx ends.
//
// A slow callback never stalls PutRecord: ids wait in a per-watcher set, so a burst
// of changes to one app while the callback runs makes one call, not one per change
// (callers re-read the record anyway). The set holds at most one entry per app, so
// nothing is dropped and memory stays bounded.
func (s *MemStore) Watch(ctx context.Context, changed func(appID string)) {
	if ctx.Err() != nil {
		return
	}
	w := &memWatcher{pending: map[string]struct{}{}, signal: make(chan struct{}, 1)}
	s.mu.Lock()
	s.watchers = append(slices.Clip(s.watchers), w)
	s.mu.Unlock()
	go func() {
		defer s.removeWatcher(w)
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.signal:
			}
			w.mu.Lock()
			batch := w.pending
			w.pending = make(map[string]struct{}, len(batch))
			w.mu.Unlock()
			for app := range batch {
				if ctx.Err() != nil {
					return
				}
				changed(app)
			}
		}
	}()
}

type memWatcher struct {
	mu      sync.Mutex
	pending map[string]struct{}
	signal  chan struct{} // capacity 1: "pending is not empty"
}

// notify queues appID for every watcher without blocking.
func notify(watchers []*memWatcher, appID string) {
	for _, w := range watchers {
		w.mu.Lock()
		w.pending[appID] = struct{}{}
		w.mu.Unlock()
		select {
		case w.signal <- struct{}{}:
		default: // already signalled
		}
	}
}

func (s *MemStore) removeWatcher(w *memWatcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A new slice, since a PutRecord may be iterating over the old one.
	s.watchers = slices.DeleteFunc(slices.Clone(s.watchers), func(x *memWatcher) bool { return x == w })
}

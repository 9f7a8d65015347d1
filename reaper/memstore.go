package reaper

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
// every record, clock, ask, setting and queued webhook event. Locks and in-flight
// counts are not saved: they describe live processes, which a restart ends.
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
	queues   map[string]*memQueue // by webhook (memstore_queue.go)
	gen      uint64               // bumped by every change that the state file holds
	// savedAccess are the access times as the state file last got them: an
	// access time that moves past its saved one by more than interval is saved
	// soon (TouchAccess), not at the next periodic save.
	savedAccess map[string]time.Time

	watchers  Watchers // watchers.go; its own lock
	persister          // statefile.go
}

var (
	_ Store         = (*MemStore)(nil)
	_ RecordWatcher = (*MemStore)(nil)
)

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

		savedAccess: map[string]time.Time{},
		inflight:    map[string]memInFlight{},
		locks:       map[string]memLockEntry{},
		queues:      map[string]*memQueue{},
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

package reaper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The state file keeps what a restart must not lose: records, history, access
// times, wake asks, settings and the webhooks' queued events. Access times matter most: a new process that
// believed every app had just been used would keep idle apps awake for a whole
// extra grace period after each restart.
//
// It is written atomically (temporary file in the same directory, fsync, rename,
// fsync of the directory), so a crash leaves the old file or the new one, never a
// mix. Writes happen in one background goroutine shortly after each transition,
// every Interval while Run runs, and in Close.

// stateVersion is the format of the state file. A file of another version is set
// aside like a corrupt one, so an old binary never misreads a newer file.
const stateVersion = 1

// saveDelay is how long the writer waits after a transition before it writes, so
// that a burst of transitions makes one write.
const saveDelay = 100 * time.Millisecond

type stateFile struct {
	Version  int                     `json:"version"`
	SavedAt  time.Time               `json:"saved_at"`
	Records  []Record                `json:"records"`
	History  map[string][]Transition `json:"history"` // oldest first
	Access   map[string]time.Time    `json:"last_access"`
	Asks     map[string]stateAsk     `json:"wake_asks"`
	Settings Settings                `json:"settings"`
	// Queues are the webhooks' events not yet delivered, oldest first.
	Queues map[string][]QueuedEvent `json:"webhook_queues,omitempty"`
}

type stateAsk struct {
	At      time.Time `json:"at"`
	Expires time.Time `json:"expires"`
}

// persister is the saving half of MemStore.
type persister struct {
	kick       chan struct{} // capacity 1: "something to save"
	stop       chan struct{} // closed by Close
	writerDone chan struct{} // closed when writeLoop returns

	saveMu   sync.Mutex // one write at a time, in snapshot order
	savedGen uint64     // under saveMu
	failing  bool       // under saveMu: the last write failed (log once per streak)

	closeOnce sync.Once
	closeErr  error
}

func newPersister() persister {
	return persister{
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
}

// Run saves the state file every Interval until ctx ends, then saves once more and
// returns. A save with nothing new writes nothing. Errors are logged (once per
// streak of failures), never returned: a node keeps serving when its disk fails.
// Without a Path, Run just waits for ctx.
func (s *MemStore) Run(ctx context.Context) {
	if s.path == "" {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = s.save()
			return
		case <-t.C:
			_ = s.save()
		}
	}
}

// Close stops the background writer and saves the state file one last time,
// returning that save's error. It is idempotent: later calls return the same
// error. The store stays usable in memory afterwards, but no longer saves on its
// own.
func (s *MemStore) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.writerDone
		if s.path != "" {
			s.closeErr = s.save()
		}
	})
	return s.closeErr
}

// saveSoon wakes the writer; it never blocks.
func (s *MemStore) saveSoon() {
	if s.path == "" {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default: // a save is already due: it will include this change
	}
}

func (s *MemStore) writeLoop() {
	defer close(s.writerDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		delay := time.NewTimer(saveDelay)
		select {
		case <-s.stop:
			delay.Stop()
			return // Close saves
		case <-delay.C:
		}
		_ = s.save() // logged inside
	}
}

// save writes the state file if anything changed since the last write.
func (s *MemStore) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()

	s.mu.Lock()
	gen := s.gen
	if gen == s.savedGen {
		s.mu.Unlock()
		return nil
	}
	st := s.snapshotLocked()
	s.mu.Unlock()

	// Records come out of a map: sort them (outside the lock) so files diff cleanly.
	slices.SortFunc(st.Records, func(a, b Record) int { return strings.Compare(a.AppID, b.AppID) })
	start := time.Now()
	st.SavedAt = start.UTC()
	data, err := json.Marshal(st)
	if err == nil {
		err = writeFileAtomic(s.path, append(data, '\n'))
	}
	if err != nil {
		err = fmt.Errorf("reaper: save state file: %w", err)
		if !s.failing {
			s.log.Error("reaper: cannot write the state file; keeping state in memory and retrying",
				"path", s.path, "err", err)
		} else {
			s.log.Debug("reaper: state file still not writable", "path", s.path, "err", err)
		}
		s.failing = true
		return err
	}
	if s.failing {
		s.log.Info("reaper: state file written again", "path", s.path)
		s.failing = false
	}
	s.savedGen = gen
	s.mu.Lock()
	s.savedAccess = st.Access // a copy, which nothing else keeps
	s.mu.Unlock()
	s.log.Debug("reaper: state saved", "path", s.path, "bytes", len(data)+1, "took", time.Since(start))
	return nil
}

// snapshotLocked copies what the file holds. History slices are shared, not
// copied: appendHistoryLocked only appends past their length or reslices, so the
// elements seen here never change (and the lock stays short).
func (s *MemStore) snapshotLocked() *stateFile {
	st := &stateFile{
		Version:  stateVersion,
		Records:  make([]Record, 0, len(s.records)),
		History:  make(map[string][]Transition, len(s.history)),
		Access:   make(map[string]time.Time, len(s.access)),
		Asks:     make(map[string]stateAsk, len(s.asks)),
		Settings: s.settings,
	}
	for _, r := range s.records {
		st.Records = append(st.Records, r)
	}
	for app, h := range s.history {
		st.History[app] = h[:len(h):len(h)]
	}
	if len(s.queues) > 0 {
		// Copied, unlike the history: Enqueue and Ack change them in place.
		st.Queues = make(map[string][]QueuedEvent, len(s.queues))
		for name, q := range s.queues {
			st.Queues[name] = slices.Clone(q.events)
		}
	}
	for app, at := range s.access {
		st.Access[app] = at
	}
	now := time.Now()
	for app, a := range s.asks {
		if now.Before(a.expires) {
			st.Asks[app] = stateAsk{At: a.at, Expires: a.expires.Round(0)}
		}
	}
	return st
}

// load fills the empty store from the state file. A missing file is the normal
// first start; a bad one is logged, set aside and ignored.
func (s *MemStore) load(now time.Time) {
	st, err := readState(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", s.path, now.Unix())
		if rerr := os.Rename(s.path, aside); rerr != nil {
			s.log.Error("reaper: state file is unusable and could not be set aside; starting empty",
				"path", s.path, "err", err, "rename_err", rerr)
			return
		}
		s.log.Error("reaper: state file is unusable; set aside, starting empty",
			"path", s.path, "moved_to", aside, "err", err)
		return
	}
	for _, r := range st.Records {
		s.records[r.AppID] = r
	}
	for app, h := range st.History {
		if len(h) > HistoryCap {
			h = h[len(h)-HistoryCap:]
		}
		s.history[app] = h
	}
	for app, at := range st.Access {
		s.access[app] = at
		s.savedAccess[app] = at
	}
	dropped := 0
	for app, a := range st.Asks {
		if !now.Before(a.Expires) {
			dropped++
			continue
		}
		s.asks[app] = memAsk{at: a.At, expires: a.Expires}
	}
	s.settings = st.Settings
	queued := 0
	for name, events := range st.Queues {
		q := s.queueLocked(name)
		for _, ev := range events {
			if ev.ID != "" && !q.ids[ev.ID] {
				q.events = append(q.events, ev)
				q.ids[ev.ID] = true
				queued++
			}
		}
	}
	s.log.Info("reaper: state file loaded", "path", s.path, "records", len(s.records),
		"access_times", len(s.access), "wake_asks", len(s.asks), "expired_asks_dropped", dropped,
		"webhook_events_queued", queued,
		"saved_at", st.SavedAt)
}

// readState reads and checks the state file. fs.ErrNotExist means there is none.
func readState(path string) (*stateFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("version %d, want %d", st.Version, stateVersion)
	}
	for _, r := range st.Records {
		if r.AppID == "" {
			return nil, errors.New("a record has no app_id")
		}
	}
	return &st, nil
}

// writeFileAtomic replaces path with data, mode 0600, so that a crash at any point
// leaves either the old content or the new one.
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*") // 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename is durable only once the directory is.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync a directory (EINVAL); the rename is done anyway.
	if err = d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

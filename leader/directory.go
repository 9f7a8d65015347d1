package leader

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"sync"

	"github.com/hashicorp/raft"
)

// Commands of the replicated log. Raft membership stores only id and Raft address, so the API address of
// each member travels as a log entry and lives in the directory on every node.
const (
	opSetAPIAddr    = "set_api_addr"
	opDeleteAPIAddr = "delete_api_addr"
)

// maxSnapshotSize bounds what Restore reads: a map of node ids to addresses is a few KiB at most.
const maxSnapshotSize = 4 << 20

type command struct {
	Op      string `json:"op"`
	ID      string `json:"id"`
	APIAddr string `json:"api_addr,omitempty"`
}

type directorySnapshotFile struct {
	Version  int               `json:"version"`
	APIAddrs map[string]string `json:"api_addrs"`
}

// directory is the Raft FSM: the only replicated state is the map id → API address of members. Raft is
// used for election; this map lets every node answer "where is the leader's admin API".
type directory struct {
	seeds map[string]string // from Config.Peers; read-only after construction, never replicated

	mu     sync.RWMutex
	logged map[string]string // from the log (AddVoter, and what leaders copied from their seeds)
}

var _ raft.FSM = (*directory)(nil)

func newDirectory(peers []Peer) *directory {
	d := &directory{seeds: make(map[string]string, len(peers)), logged: make(map[string]string)}
	for _, p := range peers {
		if p.APIAddr != "" {
			d.seeds[p.ID] = p.APIAddr
		}
	}
	return d
}

// lookup returns the API address of id: the logged one, which is newer, else the seed, else "".
func (d *directory) lookup(id string) string {
	d.mu.RLock()
	addr, ok := d.logged[id]
	d.mu.RUnlock()
	if ok {
		return addr
	}
	return d.seeds[id]
}

// loggedAddr returns the API address of id as the log has it.
func (d *directory) loggedAddr(id string) (string, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	addr, ok := d.logged[id]
	return addr, ok
}

// Apply applies one command. It returns nil, or an error for an entry it cannot decode: the error reaches
// the Apply future of the leader that wrote it, and the state is left unchanged on every node alike.
func (d *directory) Apply(l *raft.Log) any {
	var c command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return fmt.Errorf("leader: decode log entry %d: %w", l.Index, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch c.Op {
	case opSetAPIAddr:
		d.logged[c.ID] = c.APIAddr
	case opDeleteAPIAddr:
		delete(d.logged, c.ID)
	default:
		return fmt.Errorf("leader: log entry %d: unknown op %q", l.Index, c.Op)
	}
	return nil
}

// Snapshot copies the map; Persist writes it outside the lock, as Raft allows.
func (d *directory) Snapshot() (raft.FSMSnapshot, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return &directorySnapshot{addrs: maps.Clone(d.logged)}, nil
}

// Restore replaces the map with the snapshot's. It reads at most maxSnapshotSize bytes.
func (d *directory) Restore(rc io.ReadCloser) error {
	defer func() { _ = rc.Close() }()
	var f directorySnapshotFile
	if err := json.NewDecoder(io.LimitReader(rc, maxSnapshotSize)).Decode(&f); err != nil {
		return fmt.Errorf("leader: decode snapshot: %w", err)
	}
	if f.Version != 1 {
		return fmt.Errorf("leader: snapshot version %d is not supported", f.Version)
	}
	if f.APIAddrs == nil {
		f.APIAddrs = make(map[string]string)
	}
	d.mu.Lock()
	d.logged = f.APIAddrs
	d.mu.Unlock()
	return nil
}

type directorySnapshot struct{ addrs map[string]string }

// Persist writes the snapshot as JSON and closes the sink, or cancels it on error.
func (s *directorySnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := json.Marshal(directorySnapshotFile{Version: 1, APIAddrs: s.addrs})
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("leader: write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *directorySnapshot) Release() {}

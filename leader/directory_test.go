package leader

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

func applyCmd(t *testing.T, d *directory, index uint64, c command) any {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return d.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: b})
}

func TestDirectory_LoggedAddressWinsOverSeed(t *testing.T) {
	d := newDirectory([]Peer{{ID: "a", RaftAddr: "r1", APIAddr: "seed-a"}, {ID: "b", RaftAddr: "r2"}})
	if got := d.lookup("a"); got != "seed-a" {
		t.Fatalf("seed lookup = %q", got)
	}
	if got := d.lookup("b"); got != "" {
		t.Fatalf("peer without api address = %q", got)
	}
	if res := applyCmd(t, d, 1, command{Op: opSetAPIAddr, ID: "a", APIAddr: "logged-a"}); res != nil {
		t.Fatalf("Apply = %v", res)
	}
	if got := d.lookup("a"); got != "logged-a" {
		t.Fatalf("after set, lookup = %q", got)
	}
	if res := applyCmd(t, d, 2, command{Op: opDeleteAPIAddr, ID: "a"}); res != nil {
		t.Fatalf("Apply = %v", res)
	}
	if got := d.lookup("a"); got != "seed-a" {
		t.Fatalf("after delete, lookup = %q, want the seed again", got)
	}
}

func TestDirectory_BadEntriesLeaveStateUnchanged(t *testing.T) {
	d := newDirectory(nil)
	applyCmd(t, d, 1, command{Op: opSetAPIAddr, ID: "a", APIAddr: "x"})
	if res, ok := applyCmd(t, d, 2, command{Op: "rename", ID: "a"}).(error); !ok || !strings.Contains(res.Error(), "unknown op") {
		t.Fatalf("unknown op: %v", res)
	}
	if res, ok := d.Apply(&raft.Log{Index: 3, Data: []byte("{not json")}).(error); !ok || res == nil {
		t.Fatalf("garbage entry: %v", res)
	}
	if got, ok := d.loggedAddr("a"); !ok || got != "x" {
		t.Fatalf("state changed: %q %v", got, ok)
	}
}

// memorySink is a raft.SnapshotSink in memory.
type memorySink struct {
	bytes.Buffer
	cancelled, closed bool
}

func (s *memorySink) ID() string    { return "mem" }
func (s *memorySink) Cancel() error { s.cancelled = true; return nil }
func (s *memorySink) Close() error  { s.closed = true; return nil }

func TestDirectory_SnapshotRestoreRoundTrip(t *testing.T) {
	d := newDirectory(nil)
	applyCmd(t, d, 1, command{Op: opSetAPIAddr, ID: "a", APIAddr: "10.0.0.1:9090"})
	applyCmd(t, d, 2, command{Op: opSetAPIAddr, ID: "b", APIAddr: "10.0.0.2:9090"})
	snap, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Changes after Snapshot are not in it.
	applyCmd(t, d, 3, command{Op: opSetAPIAddr, ID: "c", APIAddr: "late"})
	sink := &memorySink{}
	if err := snap.Persist(sink); err != nil || !sink.closed || sink.cancelled {
		t.Fatalf("Persist: %v closed=%v cancelled=%v", err, sink.closed, sink.cancelled)
	}
	snap.Release()

	other := newDirectory(nil)
	applyCmd(t, other, 1, command{Op: opSetAPIAddr, ID: "stale", APIAddr: "gone"})
	if err := other.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	want := map[string]string{"a": "10.0.0.1:9090", "b": "10.0.0.2:9090"}
	if !maps.Equal(other.logged, want) {
		t.Fatalf("restored %v, want %v", other.logged, want)
	}
}

func TestDirectory_RestoreRefusesBadSnapshots(t *testing.T) {
	for name, input := range map[string]string{
		"garbage":         "nope",
		"unknown version": `{"version":2,"api_addrs":{}}`,
		"too large":       `{"version":1,"api_addrs":{"a":"` + strings.Repeat("x", maxSnapshotSize) + `"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := newDirectory(nil)
			applyCmd(t, d, 1, command{Op: opSetAPIAddr, ID: "a", APIAddr: "kept"})
			if err := d.Restore(io.NopCloser(strings.NewReader(input))); err == nil {
				t.Fatal("Restore accepted it")
			}
			if got, _ := d.loggedAddr("a"); got != "kept" {
				t.Fatalf("state changed to %q", got)
			}
		})
	}
}

// failingSink fails every write.
type failingSink struct{ memorySink }

func (s *failingSink) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestDirectory_PersistCancelsOnWriteError(t *testing.T) {
	snap, _ := newDirectory(nil).Snapshot()
	sink := &failingSink{}
	if err := snap.Persist(sink); err == nil || !sink.cancelled || sink.closed {
		t.Fatalf("Persist = %v, cancelled=%v closed=%v", err, sink.cancelled, sink.closed)
	}
}

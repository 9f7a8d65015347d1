package reaper_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/reaper"
)

// savedLine is the Debug line of each successful write of the state file.
const savedLine = "reaper: state saved"

// reopen loads a second store from path, as a restarted node would.
func reopen(t *testing.T, path string) *reaper.MemStore {
	t.Helper()
	return newMemStore(t, reaper.MemStoreOptions{Path: path})
}

func TestStateFile_RestartKeepsEveryClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "state.json") // the directory is created
	s := newMemStore(t, reaper.MemStoreOptions{Path: path})
	ctx := t.Context()
	now := time.Now()
	lastAccess := now.Add(-7 * time.Minute) // idle for 7 minutes at the restart
	rec := reaper.Record{
		AppID: "a", Owner: "orga_1", Name: "A", Status: reaper.StatusDown, Cause: "idle for 15m0s",
		ErrorCause: "none", PlatformState: paas.StateShouldBeDown,
		LastStatusUpdate: now, LastUpAt: now.Add(-time.Hour), LastDownAt: now, ActionAt: now.Add(-time.Minute),
		StartSentAt: now.Add(-2 * time.Hour), LastCheckAt: now, Term: 3,
	}
	mustPut(t, s, rec)
	mustPut(t, s, reaper.Record{AppID: "b", Status: reaper.StatusUp})
	// The put of a in Down wrote its history entry: WaitingForInit → Down, now.
	if err := s.TouchAccess(ctx, map[string]time.Time{"a": lastAccess, "b": now}); err != nil {
		t.Fatal(err)
	}
	if err := s.AskWake(ctx, "b", now, 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSettings(ctx, reaper.Settings{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInFlight(ctx, "node-1", map[string]int{"a": 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, "a", 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close = %v, want nil", err)
	}

	r := reopen(t, path)
	got, ok, err := r.Record(ctx, "a")
	if err != nil || !ok {
		t.Fatalf("record a lost across the restart (ok %v, err %v)", ok, err)
	}
	if got.Status != rec.Status || got.Term != 3 || got.PlatformState != rec.PlatformState ||
		!got.LastDownAt.Equal(rec.LastDownAt) || !got.ActionAt.Equal(rec.ActionAt) || got.Cause != rec.Cause {
		t.Errorf("record after restart = %+v, want %+v", got, rec)
	}
	if recs, _ := r.Records(ctx); len(recs) != 2 {
		t.Errorf("Records after restart = %d, want 2", len(recs))
	}
	hist, total, _ := r.History(ctx, "a", 0, 10)
	if total != 1 || hist[0].To != reaper.StatusDown || !hist[0].At.Equal(now) {
		t.Errorf("history after restart = %+v", hist)
	}
	access, _ := r.LastAccess(ctx)
	// The point of the file: the idle clock does not restart with the process.
	if !access["a"].Equal(lastAccess) || !access["b"].Equal(now) {
		t.Errorf("LastAccess after restart = %v, want a=%v b=%v", access, lastAccess, now)
	}
	asks, _ := r.WakeAsks(ctx)
	if !asks["b"].Equal(now) || len(asks) != 1 {
		t.Errorf("WakeAsks after restart = %v, want b=%v", asks, now)
	}
	if set, _ := r.Settings(ctx); !set.DryRun {
		t.Errorf("Settings after restart = %+v, want dry run", set)
	}
	// Live-process state is not carried over.
	if inf, _ := r.InFlight(ctx); len(inf) != 0 {
		t.Errorf("InFlight after restart = %v, want none", inf)
	}
	if _, err := r.Lock(ctx, "a", 0, time.Minute); err != nil {
		t.Errorf("the lock of the old process survived the restart: %v", err)
	}
}

func TestStateFile_Format(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	s := newMemStore(t, reaper.MemStoreOptions{Path: path})
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp})
	if err := s.SetInFlight(t.Context(), "n", map[string]int{"a": 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode = %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only state.json (no temp file left)", len(entries))
	}
	data, _ := os.ReadFile(path)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("state file is not JSON: %v", err)
	}
	if string(doc["version"]) != "1" {
		t.Errorf("version = %s, want 1", doc["version"])
	}
	for _, key := range []string{"records", "history", "last_access", "wake_asks", "settings"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("state file has no %q", key)
		}
	}
	if strings.Contains(string(data), `"n"`) {
		t.Errorf("in-flight counts were saved: %s", data)
	}
}

func TestStateFile_TransitionSavedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		log, logs := newLogger()
		s := newMemStore(t, reaper.MemStoreOptions{Path: path, Logger: log})
		mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp})
		time.Sleep(time.Second) // well under the 15 s interval (Run is not even running)
		synctest.Wait()
		if n := logs.Lines(savedLine); n != 1 {
			t.Fatalf("%d saves after a transition, want 1; log:\n%s", n, logs)
		}
		if rec, ok, _ := reopen(t, path).Record(t.Context(), "a"); !ok || rec.Status != reaper.StatusUp {
			t.Fatalf("state file after a transition holds %+v (ok %v), want a Up", rec, ok)
		}

		// The same status again is no transition: it waits for the periodic save.
		mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp, Cause: "checked"})
		time.Sleep(time.Second)
		synctest.Wait()
		if n := logs.Lines(savedLine); n != 1 {
			t.Fatalf("%d saves after a put without transition, want still 1", n)
		}
	})
}

func TestStateFile_BurstOfTransitionsMakesOneWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		log, logs := newLogger()
		s := newMemStore(t, reaper.MemStoreOptions{Path: path, Logger: log})
		last := reaper.StatusUp
		for i := range 1000 {
			last = reaper.Statuses[i%len(reaper.Statuses)]
			mustPut(t, s, reaper.Record{AppID: "a", Status: last, Cause: "burst"})
			runtime.Gosched() // give the writer every chance to write in the middle
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := logs.Lines(savedLine); n != 1 {
			t.Fatalf("1000 transitions made %d writes, want 1", n)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if n := logs.Lines(savedLine); n != 1 {
			t.Fatalf("Close with nothing new wrote again (%d writes)", n)
		}
		if rec, _, _ := reopen(t, path).Record(t.Context(), "a"); rec.Status != last {
			t.Fatalf("state file holds status %s, want the last one, %s", rec.Status, last)
		}
	})
}

func TestStateFile_PeriodicSave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		s := newMemStore(t, reaper.MemStoreOptions{Path: path, Interval: 15 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			s.Run(ctx)
		}()
		// The app's first access is saved soon (TouchAccess); a touch that moves
		// it less than the interval waits for the periodic save.
		first := time.Now().Add(-time.Minute)
		if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": first}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		touched := first.Add(10 * time.Second)
		if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": touched}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(13 * time.Second)
		synctest.Wait()
		if got, _ := reopen(t, path).LastAccess(t.Context()); !got["a"].Equal(first) {
			t.Fatalf("before the interval the state file holds access %v, want a=%v (a touch of 10 s is not saved at once)", got, first)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got, _ := reopen(t, path).LastAccess(t.Context()); !got["a"].Equal(touched) {
			t.Fatalf("after 15 s the state file holds access %v, want a=%v", got, touched)
		}

		// Run saves once more when its context ends.
		later := time.Now()
		if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": later}); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-ran
		if got, _ := reopen(t, path).LastAccess(t.Context()); !got["a"].Equal(later) {
			t.Fatalf("after Run ended the state file holds access %v, want a=%v", got, later)
		}
	})
}

func TestStateFile_ExpiredAsksDroppedOnLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		s := newMemStore(t, reaper.MemStoreOptions{Path: path})
		now := time.Now()
		if err := s.AskWake(t.Context(), "short", now, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.AskWake(t.Context(), "long", now, 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute) // the node was down for two minutes
		log, logs := newLogger()
		asks, _ := newMemStore(t, reaper.MemStoreOptions{Path: path, Logger: log}).WakeAsks(t.Context())
		if logs.Lines("state file loaded", "wake_asks=1", "expired_asks_dropped=1") != 1 {
			t.Errorf("the load does not say it dropped the expired ask; log:\n%s", logs)
		}
		if _, ok := asks["short"]; ok || !asks["long"].Equal(now) {
			t.Fatalf("asks after a 2 min restart = %v, want only long", asks)
		}
		// The long ask keeps its original expiry, not a fresh 30 minutes.
		time.Sleep(28 * time.Minute)
		if asks, _ := reopen(t, path).WakeAsks(t.Context()); len(asks) != 0 {
			t.Fatalf("asks past their 30 min = %v, want none", asks)
		}
	})
}

func TestStateFile_CorruptFileSetAside(t *testing.T) {
	cases := map[string]string{
		"garbage":        "\x00\x01 not json at all",
		"truncated JSON": `{"version":1,"records":[{"app_id":"a","status":"Up"`,
		"wrong version":  `{"version":99,"records":[]}`,
		"no version":     `{"records":[]}`,
		"empty":          ``,
		"record sans id": `{"version":1,"records":[{"status":"Up"}]}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			log, logs := newLogger()
			s := newMemStore(t, reaper.MemStoreOptions{Path: path, Logger: log})

			if recs, _ := s.Records(t.Context()); len(recs) != 0 {
				t.Errorf("store from a corrupt file has records %v, want none", recs)
			}
			if n := logs.Lines("level=ERROR", "state file is unusable", path); n != 1 {
				t.Errorf("want one ERROR line naming %s; log:\n%s", path, logs)
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("files set aside = %v, want one %s.corrupt-<unix time>", aside, path)
			}
			if kept, _ := os.ReadFile(aside[0]); string(kept) != content {
				t.Errorf("the set-aside file was altered: %q", kept)
			}
			if !strings.Contains(logs.String(), aside[0]) {
				t.Errorf("the log does not say where the file went (%s):\n%s", aside[0], logs)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the corrupt file is still at %s", path)
			}

			// The store works and saves over the old name.
			mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp})
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, ok, _ := reopen(t, path).Record(t.Context(), "a"); !ok {
				t.Errorf("a new state file was not written after the corrupt one")
			}
		})
	}
}

func TestStateFile_UnreadableFileSetAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.Mkdir(path, 0o700); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	log, logs := newLogger()
	s := newMemStore(t, reaper.MemStoreOptions{Path: path, Logger: log})
	if logs.Lines("level=ERROR", path) != 1 {
		t.Fatalf("want one ERROR line naming %s; log:\n%s", path, logs)
	}
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp})
	if err := s.Close(); err != nil {
		t.Fatalf("Close after setting the unreadable path aside: %v", err)
	}
}

func TestStateFile_WriteFailureIsLoggedNotFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "data")
		path := filepath.Join(dir, "state.json")
		log, logs := newLogger()
		s := newMemStore(t, reaper.MemStoreOptions{Path: path, Logger: log})

		// Make the directory unwritable in a way that holds even for root: a file
		// where the directory was.
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for i, st := range []reaper.Status{reaper.StatusUp, reaper.StatusDown, reaper.StatusUp} {
			mustPut(t, s, reaper.Record{AppID: "a", Status: st})
			time.Sleep(time.Second)
			synctest.Wait()
			if n := logs.Lines("level=ERROR", "cannot write the state file", path); n != 1 {
				t.Fatalf("after failed save %d: %d ERROR lines, want exactly 1 for the streak; log:\n%s", i+1, n, logs)
			}
		}
		if rec, ok, err := s.Record(t.Context(), "a"); !ok || err != nil || rec.Status != reaper.StatusUp {
			t.Fatalf("the store stopped working in memory: %+v %v %v", rec, ok, err)
		}

		// The disk comes back: the next save works and says so.
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusDown})
		time.Sleep(time.Second)
		synctest.Wait()
		if logs.Lines("level=INFO", "state file written again") != 1 {
			t.Fatalf("no recovery line; log:\n%s", logs)
		}
		if rec, _, _ := reopen(t, path).Record(t.Context(), "a"); rec.Status != reaper.StatusDown {
			t.Fatalf("state file after recovery holds %+v", rec)
		}
	})
}

func TestStateFile_ReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories; TestStateFile_WriteFailureIsLoggedNotFatal covers the failure")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	log, logs := newLogger()
	s := newMemStore(t, reaper.MemStoreOptions{Path: path, Logger: log})
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp})
	if err := s.Close(); err == nil {
		t.Fatal("Close into a read-only directory returned no error")
	}
	if logs.Lines("level=ERROR", "cannot write the state file", path) != 1 {
		t.Fatalf("want one ERROR line; log:\n%s", logs)
	}
}

func TestNewMemStore_DirectoryCannotBeCreated(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := reaper.NewMemStore(reaper.MemStoreOptions{Path: filepath.Join(blocker, "state.json")}); err == nil {
		_ = s.Close()
		t.Fatal("NewMemStore under a regular file returned no error")
	}
}

// An operator's hold, its history entry and an app's savings outlive a restart
// of a single node: they are in the state file.
func TestStateFile_RestartKeepsHoldsEventsAndSavings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s := newMemStore(t, reaper.MemStoreOptions{Path: path})
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	hold := &reaper.KeepWarm{Until: now.Add(6 * time.Hour), Reason: "nightly backup", By: "ops", Since: now}
	rec := reaper.Record{AppID: "a", Status: reaper.StatusUp, LastStatusUpdate: now, Hold: hold,
		Saved: &reaper.SavedTime{AllTimeSeconds: 7200, Day: "2026-12-01", DaySeconds: 60, Month: "2026-12", MonthSeconds: 120}, MemoryBytes: 1 << 30}
	mustPut(t, s, rec)
	if err := s.AddEvent(ctx, reaper.Transition{AppID: "a", From: reaper.StatusUp, To: reaper.StatusUp, At: now, Kind: reaper.EventHold, By: "ops", Hold: hold}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := reopen(t, path)
	got, _, err := r.Record(ctx, "a")
	if err != nil || got.Hold == nil || *got.Hold != *hold || got.Saved == nil || *got.Saved != *rec.Saved || got.MemoryBytes != 1<<30 {
		t.Fatalf("after a restart: %+v (hold %+v, saved %+v), %v; want the hold and the savings", got, got.Hold, got.Saved, err)
	}
	hist, total, _ := r.History(ctx, "a", 0, 10)
	if total != 2 || hist[0].Kind != reaper.EventHold || hist[0].By != "ops" || hist[0].Hold == nil {
		t.Fatalf("history after a restart: %+v; want the hold event on top", hist)
	}
}

// The webhooks' undelivered events outlive a restart of a single node, in their
// order, and an event acked before the restart stays gone.
func TestStateFile_RestartKeepsQueuedWebhookEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s := newMemStore(t, reaper.MemStoreOptions{Path: path})
	ctx := t.Context()
	now := time.Now().UTC()
	for i, id := range []string{"e1", "e2", "e3"} {
		ev := reaper.QueuedEvent{ID: id, Type: "status", QueuedAt: now, Transition: reaper.Transition{
			AppID: "a", From: reaper.StatusDown, To: reaper.StatusUp, At: now.Add(time.Duration(i) * time.Second)}}
		if _, err := s.Enqueue(ctx, "ops", ev, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Ack(ctx, "ops", "e1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := reopen(t, path)
	evs, err := r.Pending(ctx, "ops", 100)
	if err != nil || len(evs) != 2 || evs[0].ID != "e2" || evs[1].ID != "e3" || !evs[1].At.Equal(now.Add(2*time.Second)) {
		t.Fatalf("after a restart: %+v, %v; want e2 then e3", evs, err)
	}
	// Ids are known again: a second Enqueue of e3 changes nothing.
	if _, err := r.Enqueue(ctx, "ops", evs[1], 100); err != nil {
		t.Fatal(err)
	}
	if evs, _ := r.Pending(ctx, "ops", 100); len(evs) != 2 {
		t.Fatalf("after queueing e3 again: %d events, want 2", len(evs))
	}
}

// The first request after a quiet time moves an app's idle clock by all that
// time: it is saved within moments, not at the next periodic save, so a node
// killed (SIGKILL) right after does not give the app back its old clock and put
// it to sleep a grace period early. Smaller moves wait for the periodic save: a
// crash costs an idle clock at most the save interval.
func TestStateFile_IdleClockMovedAfterAQuietTimeSavedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		log, logs := newLogger()
		s := newMemStore(t, reaper.MemStoreOptions{Path: path, Interval: 15 * time.Second, Logger: log}) // no Run: no periodic save
		quiet := time.Now().Add(-14 * time.Minute)
		if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": quiet}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		saves := logs.Lines(savedLine)

		// 14 minutes later, a request: the clock moves by 14 minutes.
		now := time.Now()
		if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": now}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got, _ := reopen(t, path).LastAccess(t.Context()); !got["a"].Equal(now.Round(0)) {
			t.Fatalf("a second after the first request in 14 min, the state file holds access %v, want a=%v", got["a"], now)
		}
		if n := logs.Lines(savedLine) - saves; n != 1 {
			t.Fatalf("%d saves for the move, want 1", n)
		}

		// Requests every few seconds move it by less than the interval: no save each time.
		for range 3 {
			time.Sleep(4 * time.Second)
			if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if n := logs.Lines(savedLine) - saves; n != 1 {
			t.Fatalf("%d saves after touches 4 s apart, want still 1 (they wait for the periodic save)", n)
		}
		time.Sleep(4 * time.Second) // 16 s past the saved clock
		if err := s.TouchAccess(t.Context(), map[string]time.Time{"a": time.Now()}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := logs.Lines(savedLine) - saves; n != 2 {
			t.Fatalf("%d saves once the clock moved 16 s past the saved one, want 2", n)
		}
	})
}

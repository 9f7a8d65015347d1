package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// queuedEvent is an event of app queued at base+i seconds, with every field set.
func queuedEvent(app string, i int) reaper.QueuedEvent {
	at := base.Add(time.Duration(i) * time.Second)
	return reaper.QueuedEvent{
		ID: fmt.Sprintf("0195f3c2-0000-7000-8000-%012d", i), Type: "hold", AppName: "the " + app + " app", QueuedAt: at.Add(time.Millisecond),
		Transition: reaper.Transition{
			AppID: app, From: reaper.StatusUp, To: reaper.StatusUp, Cause: "nightly backup", At: at, Kind: reaper.EventHold,
			By: "ops", Node: "n1",
			Hold:   &reaper.KeepWarm{Until: at.Add(6 * time.Hour), Reason: "nightly backup", By: "ops", Since: at},
			Phases: &reaper.WakeTimes{AskedAt: at, AcceptedAt: at.Add(time.Millisecond), UpAt: at.Add(time.Second), FirstAnswerAt: at.Add(2 * time.Second)},
		},
	}
}

func mustEnqueue(t *testing.T, s reaper.Store, queue string, ev reaper.QueuedEvent, limit int) int {
	t.Helper()
	dropped, err := s.Enqueue(t.Context(), queue, ev, limit)
	if err != nil {
		t.Fatalf("Enqueue(%s, %s): %v", queue, ev.ID, err)
	}
	return dropped
}

func mustAck(t *testing.T, s reaper.Store, queue, id string) {
	t.Helper()
	if err := s.Ack(t.Context(), queue, id); err != nil {
		t.Fatalf("Ack(%s, %s): %v", queue, id, err)
	}
}

// pendingIDs is the ids Pending returns, in its order, joined by spaces.
func pendingIDs(t *testing.T, s reaper.Store, queue string, limit int) string {
	t.Helper()
	evs, err := s.Pending(t.Context(), queue, limit)
	if err != nil {
		t.Fatalf("Pending(%s, %d): %v", queue, limit, err)
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID[len(ev.ID)-2:]
	}
	return strings.Join(ids, " ")
}

func testQueueRoundTrip(t *testing.T, s reaper.Store) {
	paris := time.FixedZone("CET", 3600)
	want := queuedEvent("a", 1)
	want.At = want.At.Add(123_456_789 * time.Nanosecond).In(paris)
	mustEnqueue(t, s, "ops", want, 10)
	got, err := s.Pending(t.Context(), "ops", 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("Pending = %+v, %v; want the event", got, err)
	}
	g, _ := json.Marshal(got[0])
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("the event came back as\n  %s\nwant\n  %s", g, w)
	}
	if evs, err := s.Pending(t.Context(), "nobody", 10); err != nil || len(evs) != 0 {
		t.Errorf("Pending(unknown queue) = %v, %v; want none, no error", evs, err)
	}
}

func testQueueOrderAndAck(t *testing.T, s reaper.Store) {
	for i := 1; i <= 5; i++ {
		mustEnqueue(t, s, "ops", queuedEvent([]string{"a", "b"}[i%2], i), 100)
	}
	if got := pendingIDs(t, s, "ops", 100); got != "01 02 03 04 05" {
		t.Fatalf("Pending = %s, want the five in the order they were queued", got)
	}
	if got := pendingIDs(t, s, "ops", 2); got != "01 02" {
		t.Errorf("Pending(limit 2) = %s, want the two oldest", got)
	}
	mustAck(t, s, "ops", queuedEvent("b", 3).ID)
	mustAck(t, s, "ops", queuedEvent("a", 1).ID)
	if got := pendingIDs(t, s, "ops", 100); got != "02 04 05" {
		t.Errorf("Pending after two acks = %s, want 02 04 05", got)
	}
	// Acking twice, or an id never queued, is no error.
	mustAck(t, s, "ops", queuedEvent("a", 1).ID)
	mustAck(t, s, "ops", "never-queued")
	mustAck(t, s, "nobody", "never-queued")
	mustEnqueue(t, s, "ops", queuedEvent("a", 6), 100)
	if got := pendingIDs(t, s, "ops", 100); got != "02 04 05 06" {
		t.Errorf("Pending = %s, want a new event last", got)
	}
}

func testQueueEnqueueIdempotent(t *testing.T, s reaper.Store) {
	ev := queuedEvent("a", 1)
	mustEnqueue(t, s, "ops", ev, 100)
	mustEnqueue(t, s, "ops", queuedEvent("a", 2), 100)
	again := ev
	again.Cause = "queued again by another node"
	if d := mustEnqueue(t, s, "ops", again, 100); d != 0 {
		t.Errorf("Enqueue of a queued id dropped %d", d)
	}
	evs, err := s.Pending(t.Context(), "ops", 100)
	if err != nil || len(evs) != 2 || evs[0].ID != ev.ID || evs[0].Cause != ev.Cause {
		t.Fatalf("Pending = %+v, %v; want the first event once, as first queued, then the second", evs, err)
	}
}

func testQueueBound(t *testing.T, s reaper.Store) {
	for i := 1; i <= 3; i++ {
		if d := mustEnqueue(t, s, "ops", queuedEvent("a", i), 3); d != 0 {
			t.Fatalf("Enqueue %d of 3 dropped %d", i, d)
		}
	}
	if d := mustEnqueue(t, s, "ops", queuedEvent("a", 4), 3); d != 1 {
		t.Errorf("Enqueue past the bound dropped %d, want 1", d)
	}
	if got := pendingIDs(t, s, "ops", 100); got != "02 03 04" {
		t.Errorf("Pending = %s, want the oldest dropped: 02 03 04", got)
	}
	// A smaller bound (the configuration changed) drops down to it at once.
	if d := mustEnqueue(t, s, "ops", queuedEvent("a", 5), 2); d != 2 {
		t.Errorf("Enqueue with a bound of 2 over 3 queued dropped %d, want 2", d)
	}
	if got := pendingIDs(t, s, "ops", 100); got != "04 05" {
		t.Errorf("Pending = %s, want 04 05", got)
	}
	// A dropped event may be queued again: it is new to the queue.
	mustEnqueue(t, s, "ops", queuedEvent("a", 2), 100)
	if got := pendingIDs(t, s, "ops", 100); got != "04 05 02" {
		t.Errorf("Pending = %s, want 04 05 02", got)
	}
}

func testQueuePerQueue(t *testing.T, s reaper.Store) {
	ev := queuedEvent("a", 1)
	mustEnqueue(t, s, "ops", ev, 10)
	mustEnqueue(t, s, "slack", ev, 10) // the same event, for two webhooks
	mustEnqueue(t, s, "slack", queuedEvent("a", 2), 10)
	mustAck(t, s, "ops", ev.ID)
	if got := pendingIDs(t, s, "ops", 10); got != "" {
		t.Errorf("ops = %q, want empty", got)
	}
	if got := pendingIDs(t, s, "slack", 10); got != "01 02" {
		t.Errorf("slack = %q after an ack on ops, want 01 02", got)
	}
}

// Nodes queue concurrently (the leader's job, a follower's first answer):
// every event is kept, once.
func testQueueConcurrent(t *testing.T, s reaper.Store) {
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.Enqueue(t.Context(), "ops", queuedEvent("a", i%20), 1000); err != nil {
				t.Errorf("Enqueue: %v", err)
			}
		})
	}
	wg.Wait()
	evs, err := s.Pending(t.Context(), "ops", 1000)
	if err != nil || len(evs) != 20 {
		t.Fatalf("Pending = %d events, %v; want 20 (each queued twice)", len(evs), err)
	}
}

// A window as large as the deliverer reads, drained from the front: the
// order holds throughout.
func testQueueDrain(t *testing.T, s reaper.Store) {
	const n = 300
	for i := range n {
		mustEnqueue(t, s, "ops", queuedEvent("a", i), 10_000)
	}
	for i := range n {
		limit := 1
		if i%100 == 0 {
			limit = n // the whole window, now and then
		}
		evs, err := s.Pending(t.Context(), "ops", limit)
		if err != nil || len(evs) != min(limit, n-i) || evs[0].ID != queuedEvent("a", i).ID {
			t.Fatalf("Pending(%d) after %d acks: %d events, %v; want %d from event %d", limit, i, len(evs), err, min(limit, n-i), i)
		}
		mustAck(t, s, "ops", evs[0].ID)
	}
	if got := pendingIDs(t, s, "ops", n); got != "" {
		t.Errorf("drained queue = %q", got)
	}
}

// Package storetest is the contract every reaper.Store must meet, as a test suite
// that each implementation runs against itself:
//
//	func TestMemStore_Contract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) reaper.Store { ... })
//	}
//
// The suite knows nothing of how a store works inside: it speaks only through the
// interfaces of reaper/store.go, and every wait is a poll with a deadline, so it
// runs the same against a store in memory and one across a real network.
//
// Access and ask times in the suite are whole milliseconds, so a store may keep
// those at millisecond precision; records and transitions must round-trip to the
// nanosecond (times are compared with Equal, so the location may change).
package storetest

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// Run runs the contract every reaper.Store must meet. newStore returns a fresh,
// empty store (closing it in t.Cleanup); it is called once per subtest. Subtests
// run one after the other, never in parallel, so newStore may reuse one server.
//
// Run takes a few seconds: the expiry tests wait for short TTLs (300 ms) to pass.
func Run(t *testing.T, newStore func(t *testing.T) reaper.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s reaper.Store)
	}{
		{"Record/RoundTripsEveryField", testRecordRoundTrip},
		{"Record/UnknownAppIsNotFound", testRecordUnknown},
		{"Record/PutReplaces", testRecordReplace},
		{"Records/ListsAll", testRecordsListsAll},
		{"Record/TermFence", testTermFence},
		{"DeleteRecord/TermFence", testDeleteTermFence},
		{"History/CapAndOrder", testHistoryCapAndOrder},
		{"History/Paging", testHistoryPaging},
		{"History/PerApp", testHistoryPerApp},
		{"History/WrittenWithTheRecord", testHistoryWrittenWithTheRecord},
		{"History/Events", testHistoryEvents},
		{"History/UpCarriesTheWake", testHistoryUpCarriesTheWake},
		{"TouchAccess/MergesByMax", testTouchAccessMax},
		{"TouchAccess/ConcurrentEndsAtMax", testTouchAccessConcurrent},
		{"InFlight/SumsNodes", testInFlightSums},
		{"InFlight/SetReplacesNodeCounts", testInFlightReplaces},
		{"InFlight/Expires", testInFlightExpires},
		{"WakeAsks/LaterReplacesEarlier", testAskLaterWins},
		{"WakeAsks/ClearUpTo", testAskClearUpTo},
		{"WakeAsks/Expire", testAskExpires},
		{"Lock/Exclusive", testLockExclusive},
		{"Lock/ExpiryLetsAnotherTakeIt", testLockExpiry},
		{"Lock/ExtendKeepsIt", testLockExtend},
		{"Lock/ExpiredIsLost", testLockExpiredIsLost},
		{"Lock/ConcurrentOneWinner", testLockConcurrent},
		{"Lock/ANewerTermTakesOver", testLockTakeover},
		{"Lock/AHolderTakesBackItsOwn", testLockHolderTakesBack},
		{"Settings/RoundTrip", testSettings},
		{"Queue/RoundTripsEveryField", testQueueRoundTrip},
		{"Queue/OrderAndAck", testQueueOrderAndAck},
		{"Queue/EnqueueIsIdempotent", testQueueEnqueueIdempotent},
		{"Queue/BoundDropsTheOldest", testQueueBound},
		{"Queue/PerQueue", testQueuePerQueue},
		{"Queue/ConcurrentEnqueues", testQueueConcurrent},
		{"Queue/DrainsInOrder", testQueueDrain},
		{"Watch/NotifiesPut", testWatch},
		{"Context/CancelledReturnsPromptly", testCancelledContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// waitFor is how long the suite waits for anything to happen before it fails.
const waitFor = 10 * time.Second

// shortTTL is the TTL of entries the suite watches expire.
const shortTTL = 300 * time.Millisecond

// eventually polls cond every 20 ms until it returns true, failing the test with
// the last reason it gave after waitFor.
func eventually(t *testing.T, what string, cond func() (ok bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %s", what, waitFor, why)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: test ended while waiting: %s", what, why)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// base is the suite's reference time, on a whole millisecond.
var base = time.Date(2025, 3, 14, 9, 26, 53, 589_000_000, time.UTC)

// withTimeout runs f, failing the test if it does not return within waitFor.
func withTimeout(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatalf("%s did not return within %v", what, waitFor)
	}
}

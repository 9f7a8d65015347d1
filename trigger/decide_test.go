package trigger

import (
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

func TestNextCheck_EveryAfterSuccessBackoffAfterFailures(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		every    time.Duration
		failures int
		want     time.Duration
	}{
		{"success: every", 5 * time.Second, 0, 5 * time.Second},
		{"first failure, every longer than the back-off", 5 * time.Second, 1, 5 * time.Second},
		{"failures past every: the back-off", 5 * time.Second, 4, 8 * time.Second},
		{"fast poll: the back-off's second", 200 * time.Millisecond, 1, time.Second},
		{"many failures: capped", time.Second, 40, backoffMax},
		{"long every wins over the cap", time.Hour, 40, time.Hour},
	} {
		if got := nextCheck(now, tc.every, tc.failures).Sub(now); got != tc.want {
			t.Errorf("%s: next check in %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestBackoff_DoublesFromASecondUpToTheCap(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{-1, 0}, {0, 0}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{9, 256 * time.Second}, {10, backoffMax}, {21, backoffMax}, {1 << 30, backoffMax},
	} {
		if got := backoff(tc.failures); got != tc.want {
			t.Errorf("backoff(%d) = %s, want %s", tc.failures, got, tc.want)
		}
	}
}

func TestDueBound_IsNowPlusLeadInUnixSeconds(t *testing.T) {
	now := time.Unix(1_700_000_000, 250_000_000)
	for _, tc := range []struct {
		lead time.Duration
		want string
	}{
		{0, "1700000000.250"},
		{90 * time.Second, "1700000090.250"},
		{time.Hour, "1700003600.250"},
	} {
		if got := dueBound(now, tc.lead); got != tc.want {
			t.Errorf("dueBound(lead %s) = %s, want %s", tc.lead, got, tc.want)
		}
	}
}

func TestLogChange_OnceWhenFailingStartsAndOnceWhenItEnds(t *testing.T) {
	// A source that fails, fails the same, fails otherwise, works, works, fails.
	seq := []string{"", "EOF", "refused", "refused", "timeout", "", "", "refused"}
	var logged []int
	for i := 1; i < len(seq); i++ {
		if logChange(seq[i-1], seq[i]) {
			logged = append(logged, i)
		}
	}
	if want := []int{1, 5, 7}; len(logged) != len(want) || logged[0] != 1 || logged[1] != 5 || logged[2] != 7 {
		t.Fatalf("logged at looks %v, want %v (starts failing, works again, fails again)", logged, want)
	}
}

func TestTruthy_NonZeroNumbersAndTrueAreWork(t *testing.T) {
	var num pgtype.Numeric
	if err := num.Scan("2.5"); err != nil {
		t.Fatal(err)
	}
	var zero pgtype.Numeric
	if err := zero.Scan("0"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v       any
		want    bool
		wantErr bool
	}{
		{nil, false, false}, {true, true, false}, {false, false, false},
		{int64(0), false, false}, {int64(3), true, false}, {int32(-1), true, false}, {int16(0), false, false},
		{float64(0.5), true, false}, {float32(0), false, false}, {big.NewInt(7), true, false},
		{num, true, false}, {zero, false, false},
		{"yes", false, true},
	} {
		got, err := truthy(tc.v)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("truthy(%#v) = %v, %v; want %v, error %v", tc.v, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestMerge_TakesTheRunningNodesView(t *testing.T) {
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	own := []View{{ID: "q", Kind: KindRedisList}, {ID: "p", Kind: KindEndpoint, Running: true, LastCheck: &t2}}
	others := [][]View{
		{{ID: "q", Running: false, LastCheck: &t2}, {ID: "p", Running: true, LastCheck: &t1}},
		{{ID: "q", Running: true, LastCheck: &t1, Fires: 3}, {ID: "gone", Running: true}},
	}
	got := Merge(own, others)
	if len(got) != 2 || got[0].ID != "q" || got[1].ID != "p" {
		t.Fatalf("merged %+v: want q and p, in own's order, nothing else", got)
	}
	if !got[0].Running || got[0].Fires != 3 {
		t.Errorf("q: %+v, want the running node's view (3 fires)", got[0])
	}
	if !got[1].LastCheck.Equal(t2) {
		t.Errorf("p: last check %s, want the latest of the running views (%s)", got[1].LastCheck, t2)
	}
}

// A listening trigger, which every node runs, keeps each node's view in
// Nodes (in the order of their ids), its fires summed and its last fire the
// latest; a polling one lists no nodes.
func TestMerge_AListeningTriggerListsEachNode(t *testing.T) {
	t1, t2, t3 := time.Unix(100, 0), time.Unix(200, 0), time.Unix(300, 0)
	own := []View{
		{ID: "n", Kind: KindPostgresNotify, Node: "b", Running: true, LastCheck: &t1, Fires: 1, LastFire: &t3},
		{ID: "q", Kind: KindRedisList, Node: "b"},
	}
	others := [][]View{
		{{ID: "n", Kind: KindPostgresNotify, Node: "c", Running: true, LastCheck: &t3, Failing: true, LastError: "connect: refused"}, {ID: "q", Kind: KindRedisList, Node: "c", Running: true, LastCheck: &t2, Fires: 4}},
		{{ID: "n", Kind: KindPostgresNotify, Node: "a", Running: false, LastCheck: &t2, Fires: 2, LastFire: &t2}},
	}
	got := Merge(own, others)
	n := got[0]
	if len(n.Nodes) != 3 || n.Nodes[0].Node != "a" || n.Nodes[1].Node != "b" || n.Nodes[2].Node != "c" {
		t.Fatalf("nodes %+v: want a, b and c", n.Nodes)
	}
	if a, c := n.Nodes[0], n.Nodes[2]; a.Listening || a.Fires != 2 || !c.Listening || !c.Failing || c.LastError != "connect: refused" {
		t.Errorf("nodes %+v: want a not listening with 2 fires, c listening and failing", n.Nodes)
	}
	if n.Node != "c" || n.Fires != 3 || !n.LastFire.Equal(t3) {
		t.Errorf("merged %+v: want c's view (the latest look), 3 fires, last fire %s", n, t3)
	}
	if q := got[1]; q.Nodes != nil || q.Fires != 4 || q.Node != "c" {
		t.Errorf("polling trigger %+v: want the running node's view, no nodes", q)
	}
}

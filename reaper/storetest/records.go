package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/reaper"
)

// fullRecord returns a record with every field set, times to the nanosecond and in
// several locations.
func fullRecord(app string, term uint64, status reaper.Status) reaper.Record {
	paris := time.FixedZone("CET", 3600)
	at := time.Date(2025, 3, 14, 9, 26, 53, 589_793_238, time.UTC)
	r := reaper.Record{
		AppID:            app,
		Owner:            "orga_" + app,
		Name:             "the " + app + " app",
		Status:           status,
		Cause:            "idle for 15m0s",
		ErrorCause:       "start failed: deployment FAIL",
		PlatformState:    paas.StateShouldBeDown,
		LastStatusUpdate: at,
		LastUpAt:         at.Add(-time.Hour).In(paris),
		LastDownAt:       at.Add(-2*time.Hour + 1),
		ActionAt:         at.Add(-time.Minute),
		StartSentAt:      at.Add(-30 * time.Second),
		RetryStart:       true,
		LastCheckAt:      at.Add(time.Second),
		Term:             term,
		Hold:             &reaper.KeepWarm{Until: at.Add(6 * time.Hour), Reason: "backup", By: "ops", Since: at},
		SleepAsk:         &reaper.SleepAsk{At: at.Add(2 * time.Second), By: "ops", Force: true, From: reaper.StatusError},
		Boots: &reaper.FailedBoots{Count: 2, Last: "exited with status 1 before it was ready", At: at.Add(-time.Minute),
			Start: at.Add(-70 * time.Second), RetryAt: at.Add(-58 * time.Second)},
		Wake:  &reaper.WakeTimes{AskedAt: at.Add(-3 * time.Minute), AcceptedAt: at.Add(-170 * time.Second), UpAt: at.Add(-2 * time.Minute)},
		Saved: &reaper.SavedTime{AllTimeSeconds: 3600.5, Day: "2025-03-14", DaySeconds: 60, Month: "2025-03", MonthSeconds: 120},
		Busy:  &reaper.BusyNote{Since: at.Add(-5 * time.Minute), Why: "busy: its busy_url answered 200"},
	}
	fillZeroFields(&r, at)
	return r
}

// fillZeroFields gives a value to every scalar field not set above, so a field
// added to Record is checked by the round trip before anyone updates this file.
func fillZeroFields(r *reaper.Record, at time.Time) {
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.IsZero() || !f.CanSet() || v.Type().Field(i).Name == "Term" { // Term is the caller's
			continue
		}
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(at.Add(time.Duration(i) * time.Minute)))
		case f.Kind() == reflect.String:
			f.SetString(v.Type().Field(i).Name + " value")
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.CanInt():
			f.SetInt(int64(i + 1))
		case f.CanUint():
			f.SetUint(uint64(i + 1))
		case f.CanFloat():
			f.SetFloat(float64(i) + 0.5)
		}
		// Other kinds stay zero: testRecordRoundTrip asks for a value by hand.
	}
}

// diffRecord says how got differs from want, field by field ("" if equal). Times
// are compared with Equal.
func diffRecord(got, want reaper.Record) string {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	var diff string
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gf, wf := g.Field(i).Interface(), w.Field(i).Interface()
		if gt, ok := gf.(time.Time); ok {
			if !gt.Equal(wf.(time.Time)) {
				diff += fmt.Sprintf("\n  %s = %v, want %v", name, gt, wf)
			}
			continue
		}
		if !reflect.DeepEqual(gf, wf) {
			diff += fmt.Sprintf("\n  %s = %#v, want %#v", name, gf, wf)
		}
	}
	return diff
}

func mustPut(t *testing.T, s reaper.Store, rec reaper.Record) {
	t.Helper()
	if err := s.PutRecord(t.Context(), rec); err != nil {
		t.Fatalf("PutRecord(%s, term %d): %v", rec.AppID, rec.Term, err)
	}
}

func mustRecord(t *testing.T, s reaper.Store, app string) reaper.Record {
	t.Helper()
	rec, ok, err := s.Record(t.Context(), app)
	if err != nil || !ok {
		t.Fatalf("Record(%s) = ok %v, err %v; want the record", app, ok, err)
	}
	return rec
}

func testRecordRoundTrip(t *testing.T, s reaper.Store) {
	want := fullRecord("app-1", 7, reaper.StatusWaitingForUp)
	// A field added to Record without a value here would not be checked.
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullRecord leaves Record.%s unset: give it a value", v.Type().Field(i).Name)
		}
	}
	mustPut(t, s, want)
	if d := diffRecord(mustRecord(t, s, "app-1"), want); d != "" {
		t.Errorf("Record after PutRecord differs:%s", d)
	}
	recs, err := s.Records(t.Context())
	if err != nil || len(recs) != 1 {
		t.Fatalf("Records = %d records, err %v; want 1", len(recs), err)
	}
	if d := diffRecord(recs[0], want); d != "" {
		t.Errorf("Records()[0] differs:%s", d)
	}
}

func testRecordUnknown(t *testing.T, s reaper.Store) {
	rec, ok, err := s.Record(t.Context(), "nobody")
	if err != nil || ok {
		t.Fatalf("Record(unknown) = %+v, ok %v, err %v; want ok false, no error", rec, ok, err)
	}
	recs, err := s.Records(t.Context())
	if err != nil || len(recs) != 0 {
		t.Fatalf("Records on an empty store = %v, err %v; want none", recs, err)
	}
}

func testRecordReplace(t *testing.T, s reaper.Store) {
	mustPut(t, s, fullRecord("app-1", 0, reaper.StatusUp))
	want := reaper.Record{AppID: "app-1", Status: reaper.StatusDown, Cause: "idle"}
	mustPut(t, s, want)
	if d := diffRecord(mustRecord(t, s, "app-1"), want); d != "" {
		t.Errorf("a second PutRecord must replace the whole record:%s", d)
	}
}

func testRecordsListsAll(t *testing.T, s reaper.Store) {
	want := map[string]reaper.Record{}
	for i, st := range reaper.Statuses {
		r := fullRecord("app-"+strconv.Itoa(i), uint64(i), st)
		want[r.AppID] = r
		mustPut(t, s, r)
	}
	recs, err := s.Records(t.Context())
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	if len(recs) != len(want) {
		t.Fatalf("Records = %d records, want %d", len(recs), len(want))
	}
	for _, r := range recs {
		w, ok := want[r.AppID]
		if !ok {
			t.Errorf("Records returned unknown app %q", r.AppID)
			continue
		}
		delete(want, r.AppID)
		if d := diffRecord(r, w); d != "" {
			t.Errorf("Records: %s differs:%s", r.AppID, d)
		}
	}
}

func testTermFence(t *testing.T, s reaper.Store) {
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp, Cause: "term 5", Term: 5})

	err := s.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: reaper.StatusDown, Cause: "term 4", Term: 4})
	if !errors.Is(err, reaper.ErrStaleTerm) {
		t.Fatalf("PutRecord with an older term = %v, want ErrStaleTerm", err)
	}
	if got := mustRecord(t, s, "a"); got.Cause != "term 5" || got.Term != 5 {
		t.Fatalf("a refused write changed the record: %+v", got)
	}

	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusDown, Cause: "term 5 again", Term: 5})
	if got := mustRecord(t, s, "a"); got.Cause != "term 5 again" {
		t.Fatalf("PutRecord with an equal term not applied: %+v", got)
	}
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusWaitingForUp, Cause: "term 6", Term: 6})
	if got := mustRecord(t, s, "a"); got.Cause != "term 6" || got.Term != 6 {
		t.Fatalf("PutRecord with a newer term not applied: %+v", got)
	}
	err = s.PutRecord(t.Context(), reaper.Record{AppID: "a", Term: 5})
	if !errors.Is(err, reaper.ErrStaleTerm) {
		t.Fatalf("PutRecord with term 5 after term 6 = %v, want ErrStaleTerm", err)
	}
	// The fence is per app.
	mustPut(t, s, reaper.Record{AppID: "b", Status: reaper.StatusUp, Term: 1})
}

func testDeleteTermFence(t *testing.T, s reaper.Store) {
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp, Term: 6})
	if err := s.DeleteRecord(t.Context(), "a", 5); !errors.Is(err, reaper.ErrStaleTerm) {
		t.Fatalf("DeleteRecord with an older term = %v, want ErrStaleTerm", err)
	}
	mustRecord(t, s, "a") // still there
	if err := s.DeleteRecord(t.Context(), "a", 6); err != nil {
		t.Fatalf("DeleteRecord with an equal term: %v", err)
	}
	if _, ok, err := s.Record(t.Context(), "a"); ok || err != nil {
		t.Fatalf("Record after DeleteRecord = ok %v, err %v; want gone", ok, err)
	}

	mustPut(t, s, reaper.Record{AppID: "b", Status: reaper.StatusUp, Term: 6})
	if err := s.DeleteRecord(t.Context(), "b", 7); err != nil {
		t.Fatalf("DeleteRecord with a newer term: %v", err)
	}
	if recs, err := s.Records(t.Context()); err != nil || len(recs) != 0 {
		t.Fatalf("Records after deleting both = %v, err %v; want none", recs, err)
	}
	if err := s.DeleteRecord(t.Context(), "never-there", 0); err != nil {
		t.Fatalf("DeleteRecord of an unknown app = %v, want nil (forgetting is idempotent)", err)
	}
}

// statusAt is the status of the i-th record appendN puts: Down, Up, Down, …
func statusAt(i int) reaper.Status {
	if i%2 == 0 {
		return reaper.StatusDown
	}
	return reaper.StatusUp
}

// transition is the i-th history entry appendN makes.
func transition(app string, i int) reaper.Transition {
	from := reaper.StatusWaitingForInit // no record yet
	if i > 0 {
		from = statusAt(i - 1)
	}
	return reaper.Transition{
		AppID: app, From: from, To: statusAt(i), Cause: strconv.Itoa(i),
		At: time.Date(2025, 3, 14, 9, 0, 0, 123_456_789, time.UTC).Add(time.Duration(i) * time.Second),
	}
}

func equalTransition(a, b reaper.Transition) bool {
	return a.AppID == b.AppID && a.From == b.From && a.To == b.To && a.Cause == b.Cause && a.At.Equal(b.At)
}

// appendN makes n history entries for app: n records put, each a change of
// status.
func appendN(t *testing.T, s reaper.Store, app string, n int) {
	t.Helper()
	for i := range n {
		tr := transition(app, i)
		mustPut(t, s, reaper.Record{AppID: app, Status: tr.To, Cause: tr.Cause, LastStatusUpdate: tr.At, Revision: uint64(i + 1)})
	}
}

// A record and its history entry are written together: a change of status is
// one entry (from the stored status, WaitingForInit when there is none), a put
// that keeps the status or that the term fence refuses is none.
func testHistoryWrittenWithTheRecord(t *testing.T, s reaper.Store) {
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	put := func(st reaper.Status, cause string, term uint64) error {
		at = at.Add(time.Second)
		return s.PutRecord(t.Context(), reaper.Record{AppID: "a", Status: st, Cause: cause, LastStatusUpdate: at, Term: term})
	}
	want := func(what string, entries ...reaper.Transition) {
		t.Helper()
		page, total, err := s.History(t.Context(), "a", 0, 100)
		if err != nil {
			t.Fatalf("%s: History: %v", what, err)
		}
		if total != len(entries) || len(page) != len(entries) {
			t.Fatalf("%s: history %+v (total %d), want %d entries %+v", what, page, total, len(entries), entries)
		}
		for i := range entries {
			if !equalTransition(page[i], entries[i]) {
				t.Fatalf("%s: history[%d] = %+v, want %+v", what, i, page[i], entries[i])
			}
		}
	}
	base := at
	tr := func(from, to reaper.Status, cause string, sec int) reaper.Transition {
		return reaper.Transition{AppID: "a", From: from, To: to, Cause: cause, At: base.Add(time.Duration(sec) * time.Second)}
	}
	if err := put(reaper.StatusWaitingForInit, "seen", 2); err != nil {
		t.Fatal(err)
	}
	want("a new record in WaitingForInit")
	if err := put(reaper.StatusUp, "the platform says it is up", 2); err != nil {
		t.Fatal(err)
	}
	up := tr(reaper.StatusWaitingForInit, reaper.StatusUp, "the platform says it is up", 2)
	want("WaitingForInit → Up", up)
	if err := put(reaper.StatusUp, "looked at again", 2); err != nil {
		t.Fatal(err)
	}
	want("Up again", up)
	if err := put(reaper.StatusDown, "a deposed leader", 1); !errors.Is(err, reaper.ErrStaleTerm) {
		t.Fatalf("a put of an older term = %v, want ErrStaleTerm", err)
	}
	want("a put the term fence refused", up)
	if err := put(reaper.StatusWaitingForShutdown, "idle for 1h0m0s", 3); err != nil {
		t.Fatal(err)
	}
	stop := tr(reaper.StatusUp, reaper.StatusWaitingForShutdown, "idle for 1h0m0s", 5)
	want("Up → WaitingForShutdown", stop, up)
	if err := s.DeleteRecord(t.Context(), "a", 3); err != nil {
		t.Fatal(err)
	}
	want("a deleted record keeps its history", stop, up)
	if err := put(reaper.StatusDown, "seen again", 3); err != nil {
		t.Fatal(err)
	}
	want("a record put after it was deleted", tr(reaper.StatusWaitingForInit, reaper.StatusDown, "seen again", 6), stop, up)
}

// Events change no status: they sit between the changes of status in the order
// they were added, keep every field, and share the cap.
func testHistoryEvents(t *testing.T, s reaper.Store) {
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusUp, Cause: "up", LastStatusUpdate: at})
	hold := reaper.Transition{
		AppID: "a", From: reaper.StatusUp, To: reaper.StatusUp, Cause: "nightly backup", At: at.Add(time.Second),
		Kind: reaper.EventHold, By: "ops", Node: "n1",
		Hold: &reaper.KeepWarm{Until: at.Add(6 * time.Hour), Reason: "nightly backup", By: "ops", Since: at.Add(time.Second)},
	}
	wake := reaper.Transition{
		AppID: "a", From: reaper.StatusUp, To: reaper.StatusUp, At: at.Add(2 * time.Second), Kind: reaper.EventWake, Node: "n2",
		Phases: &reaper.WakeTimes{AskedAt: at, AcceptedAt: at.Add(time.Millisecond), UpAt: at.Add(time.Second), FirstAnswerAt: at.Add(2 * time.Second)},
	}
	for _, e := range []reaper.Transition{hold, wake} {
		if err := s.AddEvent(t.Context(), e); err != nil {
			t.Fatalf("AddEvent(%s): %v", e.Kind, err)
		}
	}
	mustPut(t, s, reaper.Record{AppID: "a", Status: reaper.StatusDown, Cause: "stopped", LastStatusUpdate: at.Add(3 * time.Second)})
	page, total, err := s.History(t.Context(), "a", 0, 10)
	if err != nil || total != 4 || len(page) != 4 {
		t.Fatalf("History = %+v, total %d, err %v; want 4 entries", page, total, err)
	}
	if page[0].To != reaper.StatusDown || page[0].Kind != "" || page[3].To != reaper.StatusUp {
		t.Fatalf("History = %+v; want Down, the two events, Up (newest first)", page)
	}
	for i, want := range []reaper.Transition{wake, hold} {
		got := page[1+i]
		if !equalTransition(got, want) || got.Kind != want.Kind || got.By != want.By || got.Node != want.Node ||
			!reflect.DeepEqual(got.Hold, want.Hold) || !reflect.DeepEqual(got.Phases, want.Phases) {
			t.Errorf("event %s = %+v, want %+v", want.Kind, got, want)
		}
	}
	for range reaper.HistoryCap {
		if err := s.AddEvent(t.Context(), wake); err != nil {
			t.Fatal(err)
		}
	}
	if _, total, err := s.History(t.Context(), "a", 0, 1); err != nil || total != reaper.HistoryCap {
		t.Fatalf("after %d more events: total %d, err %v; want the cap %d", reaper.HistoryCap, total, err, reaper.HistoryCap)
	}
}

func testHistoryCapAndOrder(t *testing.T, s reaper.Store) {
	n := reaper.HistoryCap + 10
	appendN(t, s, "a", n)
	page, total, err := s.History(t.Context(), "a", 0, n+100)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if total != reaper.HistoryCap || len(page) != reaper.HistoryCap {
		t.Fatalf("History = %d entries, total %d; want both %d (the cap)", len(page), total, reaper.HistoryCap)
	}
	for i, tr := range page {
		if want := transition("a", n-1-i); !equalTransition(tr, want) {
			t.Fatalf("History[%d] = %+v, want %+v (newest first, oldest dropped)", i, tr, want)
		}
	}
}

func testHistoryPaging(t *testing.T, s reaper.Store) {
	const n = 20
	appendN(t, s, "a", n)
	cases := []struct {
		offset, limit int
		want          []int // Causes, as numbers
	}{
		{0, 3, []int{19, 18, 17}},
		{5, 3, []int{14, 13, 12}},
		{18, 10, []int{1, 0}},
		{20, 5, nil},
		{100, 5, nil},
	}
	for _, c := range cases {
		page, total, err := s.History(t.Context(), "a", c.offset, c.limit)
		if err != nil {
			t.Fatalf("History(offset %d, limit %d): %v", c.offset, c.limit, err)
		}
		if total != n {
			t.Errorf("History(offset %d, limit %d): total %d, want %d", c.offset, c.limit, total, n)
		}
		var got []int
		for _, tr := range page {
			i, _ := strconv.Atoi(tr.Cause)
			got = append(got, i)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("History(offset %d, limit %d) = %v, want %v", c.offset, c.limit, got, c.want)
		}
	}
}

func testHistoryPerApp(t *testing.T, s reaper.Store) {
	appendN(t, s, "a", 3)
	appendN(t, s, "b", 2)
	if _, total, err := s.History(t.Context(), "a", 0, 10); err != nil || total != 3 {
		t.Errorf("History(a) total = %d, err %v; want 3", total, err)
	}
	page, total, err := s.History(t.Context(), "b", 0, 10)
	if err != nil || total != 2 || len(page) != 2 || page[0].AppID != "b" {
		t.Errorf("History(b) = %+v, total %d, err %v; want b's 2 entries", page, total, err)
	}
	page, total, err = s.History(t.Context(), "nobody", 0, 10)
	if err != nil || total != 0 || len(page) != 0 {
		t.Errorf("History(unknown) = %v, total %d, err %v; want empty, no error", page, total, err)
	}
}

// The change from WaitingForUp to Up carries the wake's phases in the history
// (reaper.UpPhases): the one entry of the wake as far as the platform goes.
// No other change carries them, even with a wake in the record.
func testHistoryUpCarriesTheWake(t *testing.T, s reaper.Store) {
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	wake := &reaper.WakeTimes{AskedAt: at, AcceptedAt: at.Add(100 * time.Millisecond), UpAt: at.Add(2 * time.Second)}
	for i, st := range []reaper.Status{reaper.StatusDown, reaper.StatusWaitingForUp, reaper.StatusUp, reaper.StatusWaitingForShutdown} {
		rec := reaper.Record{AppID: "a", Status: st, Cause: string(st), LastStatusUpdate: at.Add(time.Duration(i) * time.Second), Term: 1}
		if st != reaper.StatusDown {
			rec.Wake = wake
		}
		mustPut(t, s, rec)
	}
	page, _, err := s.History(t.Context(), "a", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 4 {
		t.Fatalf("history %+v, want 4 changes of status", page)
	}
	for _, e := range page {
		switch {
		case e.From == reaper.StatusWaitingForUp && e.To == reaper.StatusUp:
			if e.Phases == nil || !e.Phases.AskedAt.Equal(wake.AskedAt) || !e.Phases.AcceptedAt.Equal(wake.AcceptedAt) ||
				!e.Phases.UpAt.Equal(wake.UpAt) || !e.Phases.FirstAnswerAt.IsZero() {
				t.Errorf("WaitingForUp → Up carries %+v, want the wake %+v", e.Phases, wake)
			}
		case e.Phases != nil:
			t.Errorf("%s → %s carries phases %+v, want none", e.From, e.To, e.Phases)
		}
	}
}

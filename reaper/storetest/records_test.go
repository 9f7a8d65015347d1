package storetest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// The suite's record comparison must notice a change in any field, or the
// round-trip test would pass on a store that drops one.
func TestDiffRecord_NoticesEveryField(t *testing.T) {
	want := fullRecord("a", 3, reaper.StatusUp)
	if d := diffRecord(want, want); d != "" {
		t.Fatalf("diffRecord(x, x) = %q, want empty", d)
	}
	typ := reflect.TypeFor[reaper.Record]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		got := want
		f := reflect.ValueOf(&got).Elem().Field(i)
		f.Set(reflect.Zero(f.Type()))
		if d := diffRecord(got, want); !strings.Contains(d, name) {
			t.Errorf("zeroing %s: diffRecord = %q, want it named", name, d)
		}
	}
}

func TestDiffRecord_TimesCompareByInstant(t *testing.T) {
	want := fullRecord("a", 3, reaper.StatusUp)
	got := want
	got.LastUpAt = want.LastUpAt.In(time.FixedZone("X", -7*3600))
	got.LastCheckAt = want.LastCheckAt.Local()
	if d := diffRecord(got, want); d != "" {
		t.Fatalf("the same instants in other locations differ: %s", d)
	}
	got.LastCheckAt = got.LastCheckAt.Add(time.Nanosecond)
	if d := diffRecord(got, want); !strings.Contains(d, "LastCheckAt") {
		t.Fatalf("a 1 ns difference went unnoticed: %q", d)
	}
}

package paas

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

func TestWatchers_AddNotifyCancelClose(t *testing.T) {
	var w Watchers
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	w.Add(ctx, func(id string) { got = append(got, "a:"+id) })
	w.Add(context.Background(), func(id string) { got = append(got, "b:"+id) })
	w.Notify("x")
	slices.Sort(got)
	if !slices.Equal(got, []string{"a:x", "b:x"}) {
		t.Fatalf("after Notify(x): %v, want both callbacks", got)
	}
	cancel() // the removal runs on a goroutine of its own
	testwait.For(t, 5*time.Second, "the first callback removed", func() bool { return w.Len() == 1 })
	got = nil
	w.Notify("y", "z")
	if !slices.Equal(got, []string{"b:y", "b:z"}) {
		t.Fatalf("after the first's context ended: %v, want the second's only", got)
	}
	w.Close()
	w.Add(context.Background(), func(string) { t.Error("a callback added after Close was called") })
	got = nil
	w.Notify("q")
	if got != nil {
		t.Fatalf("after Close: %v, want no call", got)
	}
}

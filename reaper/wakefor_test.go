package reaper

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/reapergw/reaper/paas/paastest"
)

// A trigger's wake goes the operator's way: a wake ask in the history naming
// the trigger, then the start; once the app is up, WakeFor does nothing.
func TestWakeFor_WakesOnceNamesTheTriggerNoOpWhenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("worker")
		e := newEnv(t, fake, "")
		e.route(config("worker"))
		e.start()
		defer e.stop()
		settle()
		ctx := context.Background()
		if rec, _ := e.engine.Record("worker"); rec.Status != StatusDown {
			t.Fatalf("worker is %s before the trigger, want Down", rec.Status)
		}
		asked, err := e.engine.WakeFor(ctx, "worker", "trigger redis-queue")
		if err != nil || !asked {
			t.Fatalf("WakeFor: %v, %v; want asked", asked, err)
		}
		settle()
		if rec, _ := e.engine.Record("worker"); rec.Status != StatusUp {
			t.Fatalf("worker is %s after the trigger, want Up", rec.Status)
		}
		hist, _, err := e.store.History(ctx, "worker", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var asks []Transition
		for _, h := range hist {
			if h.Kind == EventWakeAsk {
				asks = append(asks, h)
			}
		}
		if len(asks) != 1 || asks[0].By != "trigger redis-queue" || asks[0].Cause != "trigger redis-queue" {
			t.Fatalf("wake asks in the history: %+v; want one by and for trigger redis-queue", asks)
		}
		starts := fake.Count("start", "worker")
		asked, err = e.engine.WakeFor(ctx, "worker", "trigger redis-queue")
		settle()
		if err != nil || asked || fake.Count("start", "worker") != starts {
			t.Fatalf("WakeFor of an app that is up: asked %v, %v, starts %d → %d; want nothing done", asked, err, starts, fake.Count("start", "worker"))
		}
		if _, err := e.engine.WakeFor(ctx, "nobody", "trigger x"); !errors.Is(err, ErrNotManaged) {
			t.Fatalf("WakeFor of an app no route manages: %v, want ErrNotManaged", err)
		}
	})
}

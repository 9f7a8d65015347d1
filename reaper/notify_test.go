package reaper

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// notices records what the engine told its notifier.
type notices struct {
	mu  sync.Mutex
	got []Transition
}

func (n *notices) Notify(_ context.Context, t Transition, appName string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, t)
}

// kinds lists the notices as "kind:to by" (kind "status" for a change of status).
func (n *notices) kinds() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, t := range n.got {
		k := t.Kind
		if k == "" {
			k = "status"
		}
		k += ":" + string(t.To)
		if t.By != "" {
			k += " by " + t.By
		}
		out = append(out, k)
	}
	return out
}

func (n *notices) find(kind string) (Transition, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.got {
		if t.Kind == kind {
			return t, true
		}
	}
	return Transition{}, false
}

// gatedStart is a platform whose starts wait until gate is closed.
type gatedStart struct {
	*paastest.Fake
	gate chan struct{}
}

func (g gatedStart) Start(ctx context.Context, app paas.App) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Fake.Start(ctx, app)
}

// An operator's actions, the changes of status they bring, a held request's
// wake and a hold that runs out are told to the notifier, in order, once each;
// the hold's expiry goes to the history too.
func TestNotify_ActionsStatusesWakeAndHoldExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		e := newEnv(t, fake, "")
		// The app comes up only once the request is held: one that finds it
		// up already is let through unheld, and then no wake is told (the
		// job, asked in the background, sometimes won that race).
		gate := make(chan struct{})
		e.job = NewJob(JobOptions{Engine: e.engine, Store: e.store, PaaS: gatedStart{fake, gate}, Logger: slog.New(slog.DiscardHandler),
			FastInterval: 5 * time.Second, FullInterval: 30 * time.Second})
		e.engine.SetAsker(e.job)
		n := &notices{}
		e.engine.opts.Notifier = n
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()

		// A held request wakes the app: the first answer is told with every phase.
		held := make(chan result, 1)
		go func() { held <- do(context.Background(), p, apiRequest("GET", "/"), true) }()
		settle()
		if got := e.engine.holds.held.Load(); got != 1 {
			t.Fatalf("held requests = %d before the app starts, want 1", got)
		}
		close(gate)
		r := <-held
		if r.answer != nil {
			t.Fatalf("held request: %d, want it let through", r.status())
		}
		if err := p.TransformResponse(r.ex, &http.Response{StatusCode: 200, Header: http.Header{}}); err != nil {
			t.Fatal(err)
		}
		r.ex.Finish()
		settle()
		w, ok := n.find(EventWake)
		if !ok || w.Phases == nil || w.Phases.FirstAnswerAt.IsZero() || w.Node != "n1" {
			t.Fatalf("wake notice = %+v (found %v); want the phases up to the first answer, from n1", w, ok)
		}
		if code, body, _ := call(t, h, "POST", "/api/apps/app/_hold", `{"duration": "1h", "reason": "backup", "by": "ops"}`); code != 200 {
			t.Fatalf("hold: %d %v", code, body)
		}
		time.Sleep(time.Hour + time.Minute) // the hold runs out; the full passes look at the app
		settle()
		if code, body, _ := call(t, h, "POST", "/api/apps/app/_sleep", `{"by": "alice"}`); code != 202 {
			t.Fatalf("sleep: %d %v", code, body)
		}
		settle()
		want := []string{"status:Down", "status:WaitingForUp", "status:Up", "wake:Up", "hold:Up by ops", "hold_expired:Up by ops",
			"sleep:Up by alice", "status:WaitingForShutdown by alice", "status:Down"}
		if got := n.kinds(); !slices.Equal(got, want) {
			t.Errorf("notices = %q, want %q", got, want)
		}
		x, _ := n.find(EventHoldExpired)
		if x.Hold == nil || !x.At.Equal(x.Hold.Until) || x.Hold.Reason != "backup" {
			t.Errorf("hold_expired = %+v, want the hold, at its end", x)
		}
		hist, _, _ := e.store.History(t.Context(), "app", 0, 50)
		if !slices.ContainsFunc(hist, func(t Transition) bool { return t.Kind == EventHoldExpired }) {
			t.Errorf("the history has no hold_expired entry: %+v", hist)
		}
	})
}

// A change to Error and an operator's reset are told as changes of status.
func TestNotify_ErrorAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.FailNext("start", paas.ErrStartFailed)
		e := newEnv(t, fake, "")
		n := &notices{}
		e.engine.opts.Notifier = n
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		do(context.Background(), p, apiRequest("GET", "/"), false)
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		if code, body, _ := call(t, h, "POST", "/api/apps/app/_reset", `{"by": "ops"}`); code != 200 {
			t.Fatalf("reset: %d %v", code, body)
		}
		settle()
		got := n.kinds()
		if want := []string{"status:Down", "status:WaitingForUp", "status:Error", "status:WaitingForInit"}; len(got) < 4 || !slices.Equal(got[:4], want) {
			t.Fatalf("notices = %q, want %q first (the reset's WaitingForInit last)", got, want)
		}
	})
}

func TestHoldExpired(t *testing.T) {
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	hold := func(until time.Time, by string) *KeepWarm {
		return &KeepWarm{Until: until, By: "ops", Since: at.Add(-time.Hour), ReleasedBy: by}
	}
	rec := func(check time.Time, h *KeepWarm) Record { return Record{AppID: "a", LastCheckAt: check, Hold: h} }
	for _, c := range []struct {
		name       string
		prev, next Record
		want       bool
	}{
		{"no hold", rec(at, nil), rec(at.Add(time.Minute), nil), false},
		{"still active", rec(at, hold(at.Add(time.Hour), "")), rec(at.Add(time.Minute), hold(at.Add(time.Hour), "")), false},
		{"ran out between the looks", rec(at, hold(at.Add(time.Second), "")), rec(at.Add(time.Minute), hold(at.Add(time.Second), "")), true},
		{"ran out at the look", rec(at, hold(at.Add(time.Minute), "")), rec(at.Add(time.Minute), hold(at.Add(time.Minute), "")), true},
		{"ran out at the previous look", rec(at, hold(at, "")), rec(at.Add(time.Minute), hold(at, "")), false},
		{"told before", rec(at, hold(at.Add(-time.Hour), "")), rec(at.Add(time.Minute), hold(at.Add(-time.Hour), "")), false},
		{"released by an operator", rec(at, hold(at.Add(time.Second), "ops")), rec(at.Add(time.Minute), hold(at.Add(time.Second), "ops")), false},
		{"a write that is no look", rec(at, hold(at.Add(-time.Second), "")), rec(at, hold(at.Add(-time.Second), "")), false},
	} {
		if got := holdExpired(c.prev, c.next) != nil; got != c.want {
			t.Errorf("%s: expired %v, want %v", c.name, got, c.want)
		}
	}
}

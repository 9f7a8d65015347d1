package reaper

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas/paastest"
)

// gatedNotices is a notifier that holds the job's notice of a change to Up
// until the test lets it go.
type gatedNotices struct {
	notices
	entered chan struct{} // closed when the notice of the change to Up is being told
	gate    chan struct{} // closed by the test: the notice may go
	once    sync.Once
}

func (g *gatedNotices) Notify(ctx context.Context, t Transition, appName string) {
	if t.Kind == "" && t.To == StatusUp {
		g.once.Do(func() { close(g.entered) })
		<-g.gate
	}
	g.notices.Notify(ctx, t, appName)
}

// A change is told before the node that wrote it acts on it: while the job
// tells the change to Up, the held request it releases is still held, even
// though the store's watch has brought the record meanwhile; so the wake's
// first answer is told after the change to Up, with no wait between them.
func TestCommit_AChangeIsToldBeforeThisNodeActsOnIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		n := &gatedNotices{entered: make(chan struct{}), gate: make(chan struct{})}
		e.engine.opts.Notifier = n
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		var letGo sync.Once
		release := func() { letGo.Do(func() { close(n.gate) }) }
		defer release() // before stop, should the test end early

		settle()
		held := make(chan result, 1)
		go func() { held <- do(context.Background(), p, apiRequest("GET", "/"), true) }()
		<-n.entered
		settle() // the store's watch, the engine's poll: whatever would apply the record now does
		if st := p.route.a.status(); st == StatusUp {
			t.Fatal("this node applied the change to Up before it was told")
		}
		select {
		case r := <-held:
			t.Fatalf("the held request was released (%v) before the change to Up was told", r.answer)
		default:
		}

		release()
		r := <-held
		if r.answer != nil {
			t.Fatalf("held request: %d, want it let through", r.status())
		}
		if err := p.TransformResponse(r.ex, &http.Response{StatusCode: 200, Header: http.Header{}}); err != nil {
			t.Fatal(err)
		}
		r.ex.Finish()
		settle()
		want := []string{"status:Down", "status:WaitingForUp", "status:Up", "wake:Up"}
		if got := n.kinds(); !slices.Equal(got, want) {
			t.Errorf("notices = %q, want %q", got, want)
		}
	})
}

// hangingHolds is a notifier whose queue never takes a hold: it waits until
// its context ends, as on a store that hangs.
type hangingHolds struct{ gaveUp chan error }

func (h hangingHolds) Notify(ctx context.Context, t Transition, _ string) {
	if t.Kind == EventHold {
		<-ctx.Done()
		h.gaveUp <- ctx.Err()
	}
}

// What a change tells once it happened is bounded: an operator's action whose
// webhooks cannot be queued is answered after tellTimeout, and the node sees
// the change.
func TestCommit_WhatIsToldIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app"), "")
		n := hangingHolds{gaveUp: make(chan error, 1)}
		e.engine.opts.Notifier = n
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()

		began := time.Now()
		answered := make(chan int, 1)
		go func() {
			code, _, _ := call(t, h, "POST", "/api/apps/app/_hold", `{"duration": "1h", "by": "ops"}`)
			answered <- code
		}()
		select {
		case code := <-answered:
			if code != 200 {
				t.Fatalf("hold: %d, want 200", code)
			}
		case <-time.After(time.Minute):
			t.Fatal("the hold was not answered within a minute: what it tells is not bounded")
		}
		if took := time.Since(began); took != tellTimeout {
			t.Errorf("the hold was answered after %v, want tellTimeout (%v)", took, tellTimeout)
		}
		if err := <-n.gaveUp; err != context.DeadlineExceeded {
			t.Errorf("the notifier's context ended with %v, want its deadline", err)
		}
		if rec := p.route.a.rec.Load(); rec == nil || rec.Hold == nil || rec.Hold.By != "ops" {
			t.Errorf("the node's view after the hold: %+v, want the hold", rec)
		}
	})
}

package reaper

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

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
		if st := p.app.status(); st == StatusUp {
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

package reaper

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

type countingAsker struct{ n atomic.Int64 }

func (c *countingAsker) Ask(context.Context, string) error { c.n.Add(1); return nil }

// A backend that refuses connections while the record says Up (crashed app, or
// overloaded): every refused request resets the ask coalescing, so N requests make
// N stored asks and N calls to the Asker (N signed HTTP calls to the leader on a
// follower), each in its own goroutine.
func TestDialFailure_RefusedRequestsMakeFewAsks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newTestStore(t)
		engine := NewEngine(EngineOptions{Node: "n1", Store: store})
		asker := &countingAsker{}
		engine.SetAsker(asker)
		e := &env{t: t, engine: engine, store: store}
		p := e.route(config("app"))
		engine.Apply(Record{AppID: "app", Status: StatusUp, LastCheckAt: time.Now()})

		const n = 200
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ex := &plugin.Exchange{Request: apiRequest("GET", "/api"), ID: "r"}
				p.HandleDialFailure(ex, nil)
			}()
		}
		wg.Wait()
		settle()
		if got := asker.n.Load(); got > 2 {
			t.Errorf("%d refused requests within %v made %d wake asks; want them coalesced to one", n, recheckWait, got)
		}
	})
}

func TestDialFailure_MonitorsAndPollsGetTheirOwnAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := upApp("app")
		e := newEnv(t, fake, "")
		p := e.route(config("app", func(c *Config) {
			c.MonitoringFilters = []MonitoringFilter{{Source: "path", Regex: "^/health$"}}
		}))
		e.start()
		defer e.stop()
		settle()
		// The app died without reaper noticing yet (no watcher event).
		fake.Manual = true
		fake.Set("app", paastest.App{State: paas.StateShouldBeDown})
		settle()

		mon := &plugin.Exchange{Request: apiRequest("GET", "/health"), ID: "m"}
		act, ans := p.HandleDialFailure(mon, nil)
		if act != plugin.DialAnswer || ans == nil || ans.Status != 200 || ans.Header.Get(HeaderStatus) != "Down" {
			t.Fatalf("monitor: action %v, answer %+v", act, ans)
		}
		settle()
		if n := fake.Count("start", "app"); n != 0 {
			t.Errorf("a monitor woke the app (%d starts)", n)
		}
		pollReq := apiRequest("HEAD", "/page")
		pollReq.Header.Set(HeaderReaper, "poll")
		act, ans = p.HandleDialFailure(&plugin.Exchange{Request: pollReq, ID: "p"}, nil)
		if act != plugin.DialAnswer || ans == nil || ans.Status != 503 || ans.Header.Get("Retry-After") != "30" {
			t.Fatalf("poll: action %v, answer %+v", act, ans)
		}
		settle()
		if n := fake.Count("start", "app"); n != 1 {
			t.Errorf("a poll on a sleeping app asks a wake: %d starts, want 1", n)
		}
	})
}

package reaper

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/plugin"
)

// cutStore fails every call once cut is set: a node that lost the store.
type cutStore struct {
	*MemStore
	cut *atomic.Bool
}

var errCut = errors.New("store unreachable")

func (s cutStore) TouchAccess(ctx context.Context, m map[string]time.Time) error {
	if s.cut.Load() {
		return errCut
	}
	return s.MemStore.TouchAccess(ctx, m)
}

func (s cutStore) SetInFlight(ctx context.Context, n string, c map[string]int, ttl time.Duration) error {
	if s.cut.Load() {
		return errCut
	}
	return s.MemStore.SetInFlight(ctx, n, c, ttl)
}

// Node B holds a WebSocket open on the app for hours. B loses the store for 20 s:
// its in-flight count expires, the app's last access is the WebSocket's start, so
// the leader stops the app under B's open connection.
func TestEngine_OpenConnectionOnANodeCutFromTheStoreKeepsTheAppAwake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := upApp("app")
		shared := newTestStore(t)
		var cut atomic.Bool
		a := NewEngine(EngineOptions{Node: "a", Store: shared})
		b := NewEngine(EngineOptions{Node: "b", Store: cutStore{shared, &cut}})
		job := NewJob(JobOptions{Engine: a, Store: shared, PaaS: fake, Logger: slog.New(slog.DiscardHandler), SettleDelay: 2500 * time.Millisecond})
		a.SetAsker(job)
		cfg := config("app", func(c *Config) { c.GracePeriod = conf.Duration(10 * time.Minute) })
		(&env{t: t, engine: a}).route(cfg)
		pb := (&env{t: t, engine: b}).route(cfg)

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); a.Run(ctx) }()
		go func() { defer wg.Done(); b.Run(ctx) }()
		go func() { defer wg.Done(); job.Run(ctx, 1) }()
		defer func() { a.Shutdown(); b.Shutdown(); cancel(); wg.Wait() }()
		settle()

		// A WebSocket opens on B and stays open.
		ex := &plugin.Exchange{Request: apiRequest("GET", "/ws"), ID: "ws"}
		if ans, _ := pb.ValidateAccess(ex); ans != nil {
			t.Fatalf("websocket refused: %d", ans.Status)
		}
		time.Sleep(time.Hour) // in use all along
		cut.Store(true)       // B cannot reach the store for a while
		time.Sleep(time.Minute)
		cut.Store(false)
		time.Sleep(time.Minute)
		if n := fake.Count("stop", "app"); n != 0 {
			t.Errorf("the app was stopped %d time(s) with a connection open on node b (b was cut from the store for 1 min)", n)
		}
		ex.Finish()
	})
}

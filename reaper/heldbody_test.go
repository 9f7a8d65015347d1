package reaper

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

// pollUntil polls cond every few milliseconds until it holds, failing after limit.
func pollUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client POSTs to a sleeping app in hold mode, then gives up before the app is
// up. Its request must not reach the app when it wakes: the client is gone, and may
// well have sent it again.
func TestHold_APostWhoseClientLeftNeverReachesTheApp(t *testing.T) {
	var mu sync.Mutex
	var got []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+string(b))
		mu.Unlock()
	}))
	defer backend.Close()

	fake := paastest.New("app")
	fake.Manual = true
	store := newTestStore(t)
	engine := NewEngine(EngineOptions{Node: "n1", Store: store, PollInterval: 50 * time.Millisecond})
	job := NewJob(JobOptions{Engine: engine, Store: store, PaaS: fake, FastInterval: 50 * time.Millisecond, FullInterval: time.Second})
	engine.SetAsker(job)
	opts := plugin.BuildOptions{Logger: slog.New(slog.DiscardHandler), Services: map[string]any{ServiceName: engine}}
	rt, err := plugin.BuildRouter(context.Background(), routesYAML(t, `
- id: r1
  frontend: {domains: ["*"]}
  backend: {targets: ["`+backend.URL+`"]}
  plugins:
    - plugin: reaper
      config: {app_id: app, ready_delay: 0}
`), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	gw := plugin.NewGateway(plugin.GatewayOptions{})
	gw.Swap(rt)
	front := httptest.NewServer(gw)
	defer front.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); engine.Run(ctx) }()
	go func() { defer wg.Done(); job.Run(ctx, 0) }()
	defer func() { engine.Shutdown(); cancel(); wg.Wait() }()
	a := engine.app("app")
	pollUntil(t, 5*time.Second, "the app is seen Down", func() bool { return a.status() == StatusDown })

	c, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("POST /pay HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Length: 12\r\n\r\namount=100EU"))
	pollUntil(t, 5*time.Second, "the request is held", func() bool { return a.held.Load() == 1 })
	c.Close() // the client gives up
	pollUntil(t, 5*time.Second, "the hold ends with its client", func() bool { return a.held.Load() == 0 && a.inFlight.Load() == 0 })

	fake.FinishStart("app") // the app comes up
	pollUntil(t, 5*time.Second, "the app is Up", func() bool { return a.status() == StatusUp })
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Errorf("the app received %q from a client that had gone before it woke", got)
	}
}

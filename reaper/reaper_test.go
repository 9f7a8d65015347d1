package reaper

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/logtest"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

// env is one node's reaper (engine, job, in-memory store) in front of a fake
// platform, to be used inside a synctest bubble.
type env struct {
	t      *testing.T
	store  *MemStore
	fake   *paastest.Fake
	engine *Engine
	job    *Job
	logs   *logtest.Buffer
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func newEnv(t *testing.T, fake *paastest.Fake, storePath string) *env {
	t.Helper()
	logs := &logtest.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store, err := NewMemStore(MemStoreOptions{Path: storePath, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, fake: fake, logs: logs}
	e.engine = NewEngine(EngineOptions{Node: "n1", Store: store, Logger: logger})
	e.job = NewJob(JobOptions{Engine: e.engine, Store: store, PaaS: fake, Logger: logger, FastInterval: 5 * time.Second, FullInterval: 30 * time.Second})
	e.engine.SetAsker(e.job)
	return e
}

// start runs the engine and the job until stop.
func (e *env) start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done.Add(3)
	go func() { defer e.done.Done(); e.store.Run(ctx) }()
	go func() { defer e.done.Done(); e.engine.Run(ctx) }()
	go func() { defer e.done.Done(); e.job.Run(ctx, 0) }()
}

func (e *env) stop() {
	e.engine.Shutdown()
	e.cancel()
	e.done.Wait()
	e.store.Close()
}

// route provisions a reaper plugin for app on a route named after it.
func (e *env) route(cfg Config) *Plugin {
	e.t.Helper()
	var errs conf.Errors
	cfg.Validate("config", &errs)
	if err := errs.Err(); err != nil {
		e.t.Fatal(err)
	}
	p := &Plugin{Config: cfg}
	err := p.Provision(plugin.ProvisionContext{
		Context:  context.Background(),
		Logger:   slog.New(slog.DiscardHandler),
		Route:    &plugin.RouteConfig{ID: "route-" + cfg.AppID, Name: "Route " + cfg.AppID},
		Path:     "routes[0].plugins[0].config",
		Services: map[string]any{ServiceName: e.engine},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func config(app string, mutate ...func(*Config)) Config {
	c := DefaultConfig()
	c.AppID = app
	c.GracePeriod = conf.Duration(15 * time.Minute)
	c.FailTimeout = conf.Duration(2 * time.Minute)
	zero := conf.Duration(0)
	c.ReadyDelay = &zero
	for _, m := range mutate {
		m(&c)
	}
	return c
}

// result is what a request got from the plugin.
type result struct {
	answer *plugin.Answer
	err    error
	ex     *plugin.Exchange
}

func (r result) status() int {
	if r.answer == nil {
		return 0 // let through
	}
	return r.answer.Status
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.answer.Body, &m); err != nil {
		t.Fatalf("body %q: %v", r.answer.Body, err)
	}
	return m
}

// do sends a request through the plugin's access step; the request is over (its
// OnDone functions run) when the returned result is read, unless keep is set.
func do(ctx context.Context, p *Plugin, req *http.Request, keep bool) result {
	ex := &plugin.Exchange{Request: req.WithContext(ctx), ID: "req-1", Start: time.Now()}
	a, err := p.ValidateAccess(ex)
	if !keep {
		ex.Finish()
	}
	return result{answer: a, err: err, ex: ex}
}

func apiRequest(method, target string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Header.Set("Accept", "application/json")
	return r
}

func browserRequest() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/page", nil)
	r.Header.Set("Accept", "text/html,application/xhtml+xml")
	r.Header.Set("Accept-Language", "fr")
	return r
}

// settle lets every goroutine of the bubble run until all are blocked.
func settle() { synctest.Wait() }

func TestReaper_ConcurrentWakesStartOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		if st := p.route.a.status(); st != StatusDown {
			t.Fatalf("status after the first pass = %s, want Down", st)
		}

		const n = 200
		results := make(chan result, n)
		for range n {
			go func() { results <- do(context.Background(), p, apiRequest("GET", "/api"), false) }()
		}
		for range n {
			if r := <-results; r.err != nil || r.answer != nil {
				t.Fatalf("held request got %v / %v, want to be let through", r.answer, r.err)
			}
		}
		if got := e.fake.Count("start", "app"); got != 1 {
			t.Errorf("starts = %d, want exactly 1", got)
		}
		if st := p.route.a.status(); st != StatusUp {
			t.Errorf("status = %s, want Up", st)
		}
	})
}

func TestHold_ReleasedByEventNotPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true // the test says when the app is up
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()

		got := make(chan result, 1)
		go func() { got <- do(context.Background(), p, apiRequest("POST", "/api"), false) }()
		settle()
		if fake.Count("start", "app") != 1 {
			t.Fatalf("no start")
		}
		time.Sleep(700 * time.Millisecond) // the app boots for a while
		fake.FinishStart("app")
		upAt := time.Now()
		r := <-got
		if r.answer != nil {
			t.Fatalf("got %d, want to be let through", r.status())
		}
		// The release follows the platform's change at once, not the next poll.
		if waited := time.Since(upAt); waited != 0 {
			t.Errorf("released %v after the app was up, want at once", waited)
		}
	})
}

func TestHold_ReadyDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		p := e.route(config("app", func(c *Config) { d := conf.Duration(3 * time.Second); c.ReadyDelay = &d }))
		e.start()
		defer e.stop()
		settle()
		begin := time.Now()
		if r := do(context.Background(), p, apiRequest("GET", "/"), false); r.answer != nil {
			t.Fatalf("got %d", r.status())
		}
		if waited := time.Since(begin); waited != 3*time.Second {
			t.Errorf("waited %v, want the ready delay (3s) after the app came up", waited)
		}
	})
}

func TestHold_FailTimeoutAnswers504(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true // never comes up
		e := newEnv(t, fake, "")
		// Not 92 s: the waiter loop asks again at 2 s + every 10 s, and an ask at
		// the very instant of the request's deadline would have the job put the
		// app in Error at that instant too (the answer is the 504 all the same,
		// see holdOutcome, but its marker could say Error).
		p := e.route(config("app", func(c *Config) { c.FailTimeout = conf.Duration(93 * time.Second) }))
		e.start()
		defer e.stop()
		settle()
		begin := time.Now()
		r := do(context.Background(), p, apiRequest("GET", "/"), false)
		if r.status() != http.StatusGatewayTimeout {
			t.Fatalf("status = %d, want 504", r.status())
		}
		if waited := time.Since(begin); waited != 93*time.Second {
			t.Errorf("held %v, want the fail timeout", waited)
		}
		if m := r.json(t); m["error"] != "the application did not wake up in time" {
			t.Errorf("body = %v", m)
		}
		if r.answer.Header.Get(HeaderStatus) != "WaitingForUp" {
			t.Errorf("marker = %q", r.answer.Header.Get(HeaderStatus))
		}
	})
}

func TestHold_ErrorAnswers503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.FailNext("start", paas.ErrStartFailed)
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		r := do(context.Background(), p, apiRequest("GET", "/"), false)
		if r.status() != http.StatusServiceUnavailable {
			t.Fatalf("status = %d, want 503", r.status())
		}
		if m := r.json(t); m["error"] != "the application could not be started" || m["status"] != "Error" {
			t.Errorf("body = %v", m)
		}
		if p.route.a.status() != StatusError {
			t.Errorf("status = %s", p.route.a.status())
		}
		// Error means hands off: the next request goes through to the app.
		if r := do(context.Background(), p, apiRequest("GET", "/"), false); r.answer != nil {
			t.Errorf("in Error, got %d, want to be let through", r.status())
		}
	})
}

func TestHold_MaxHeldAndClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		e := newEnv(t, fake, "")
		p := e.route(config("app", func(c *Config) { c.MaxHeld = 2 }))
		e.start()
		defer e.stop()
		settle()
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan result, 2)
		for range 2 {
			go func() { got <- do(ctx, p, apiRequest("GET", "/"), false) }()
		}
		settle()
		r := do(context.Background(), p, apiRequest("GET", "/"), false)
		if r.status() != http.StatusServiceUnavailable || r.answer.Header.Get("Retry-After") == "" {
			t.Fatalf("third request: %d, Retry-After %q; want 503 with Retry-After", r.status(), r.answer.Header.Get("Retry-After"))
		}
		if m := r.json(t); !strings.Contains(m["error"].(string), "too many requests are waiting") {
			t.Errorf("body = %v", m)
		}
		cancel() // both clients hang up
		for range 2 {
			if r := <-got; r.status() != StatusClientClosed {
				t.Errorf("gone client got %d", r.status())
			}
		}
		if n := p.route.a.held.Load(); n != 0 {
			t.Errorf("held = %d after the clients left, want 0", n)
		}
	})
}

func TestHold_NodeWideMaxHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("a", "b")
		fake.Manual = true
		e := newEnv(t, fake, "")
		e.engine.holds.maxHeld = 3
		pa := e.route(config("a", func(c *Config) { c.MaxHeld = 2 }))
		pb := e.route(config("b", func(c *Config) { c.MaxHeld = 2 }))
		e.start()
		defer e.stop()
		settle()
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan result, 3)
		for _, p := range []*Plugin{pa, pa, pb} {
			go func() { got <- do(ctx, p, apiRequest("GET", "/"), false) }()
		}
		settle()
		// b holds one of its two, but the node holds three: no more.
		r := do(context.Background(), pb, apiRequest("GET", "/"), false)
		if r.status() != http.StatusServiceUnavailable || !strings.Contains(r.json(t)["error"].(string), "too many requests are waiting") {
			t.Fatalf("fourth request: %d %s", r.status(), r.answer.Body)
		}
		if !strings.Contains(e.logs.String(), "reaper.max_held is 3") {
			t.Errorf("no warning names the node-wide bound:\n%s", e.logs.String())
		}
		cancel()
		for range 3 {
			<-got
		}
		if n := e.engine.holds.held.Load(); n != 0 || pa.route.a.held.Load() != 0 || pb.route.a.held.Load() != 0 {
			t.Errorf("node held %d, a %d, b %d after the clients left", n, pa.route.a.held.Load(), pb.route.a.held.Load())
		}
	})
}

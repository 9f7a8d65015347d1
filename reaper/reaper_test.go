package reaper

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/reapergw/reaper/internal/logtest"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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
		if st := p.app.status(); st != StatusDown {
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
		if st := p.app.status(); st != StatusUp {
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
		if p.app.status() != StatusError {
			t.Errorf("status = %s", p.app.status())
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
		if n := p.app.held.Load(); n != 0 {
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
		if n := e.engine.holds.held.Load(); n != 0 || pa.app.held.Load() != 0 || pb.app.held.Load() != 0 {
			t.Errorf("node held %d, a %d, b %d after the clients left", n, pa.app.held.Load(), pb.app.held.Load())
		}
	})
}

func TestAnswers_WhileAsleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app", "api")
		fake.Manual = true
		e := newEnv(t, fake, "")
		p := e.route(config("app", func(c *Config) {
			c.MonitoringFilters = []MonitoringFilter{{Source: "user_agent", Regex: "(?i)uptimerobot"}}
		}))
		api := e.route(config("api", func(c *Config) { c.APIBehavior = BehaviorUnavailable }))
		e.start()
		defer e.stop()
		settle()

		// A monitor: 200, no wake, no traffic.
		mon := apiRequest("GET", "/")
		mon.Header.Set("User-Agent", "Mozilla/5.0 (compatible; UptimeRobot/2.0)")
		r := do(context.Background(), p, mon, false)
		if r.status() != 200 || r.json(t)["monitoring"] != true || r.json(t)["status"] != "Down" {
			t.Fatalf("monitor got %d %s", r.status(), r.answer.Body)
		}
		if r.answer.Header.Get(HeaderStatus) != "Down" {
			t.Errorf("monitor marker = %q", r.answer.Header.Get(HeaderStatus))
		}
		settle()
		if fake.Count("start", "app") != 0 || !p.app.lastAccessTime().IsZero() {
			t.Fatalf("a monitor woke the app or counted as traffic")
		}

		// Status header: always 200, not traffic.
		st := apiRequest("GET", "/")
		st.Header.Set(HeaderReaper, "status")
		r = do(context.Background(), p, st, false)
		if r.status() != 200 || r.json(t)["status"] != "Down" || r.json(t)["ready_delay_ms"] != float64(0) {
			t.Fatalf("status got %d %s", r.status(), r.answer.Body)
		}

		// A browser: the waiting page, and a wake.
		r = do(context.Background(), p, browserRequest(), false)
		h := r.answer.Header
		if r.status() != 503 || h.Get("Content-Type") != "text/html; charset=utf-8" || h.Get("Retry-After") != "30" ||
			h.Get("Cache-Control") != "no-store" || h.Get(HeaderStatus) != "Down" {
			t.Fatalf("browser got %d %v", r.status(), h)
		}
		if !bytes.Contains(r.answer.Body, []byte("req-1")) || !bytes.Contains(r.answer.Body, []byte(`lang="fr"`)) {
			t.Errorf("waiting page lacks the request id or the language")
		}
		settle()
		if fake.Count("start", "app") != 1 {
			t.Errorf("the browser's request did not wake the app")
		}
		if p.app.lastAccessTime().IsZero() {
			t.Errorf("a request that found the app asleep did not count as traffic")
		}

		// Poll: 503 while asleep.
		poll := apiRequest("HEAD", "/page")
		poll.Header.Set(HeaderReaper, "poll")
		r = do(context.Background(), p, poll, false)
		if r.status() != 503 || r.answer.Header.Get(HeaderStatus) != "WaitingForUp" || r.answer.Header.Get("Retry-After") != "30" {
			t.Fatalf("poll got %d %v", r.status(), r.answer.Header)
		}

		// unavailable: 503 JSON at once, and the app still starts.
		r = do(context.Background(), api, apiRequest("POST", "/x"), false)
		if r.status() != 503 || r.answer.Header.Get("Retry-After") != "30" {
			t.Fatalf("unavailable got %d", r.status())
		}
		if m := r.json(t); m["error"] != "the application is waking up, retry later" || m["status"] != "Down" {
			t.Errorf("body = %v", m)
		}
		settle()
		if fake.Count("start", "api") != 1 {
			t.Errorf("unavailable did not start the app")
		}

		// Once up: polls, monitors go through, and are not traffic.
		fake.FinishStart("app")
		settle()
		before := p.app.lastAccessTime()
		time.Sleep(time.Minute)
		if r := do(context.Background(), p, poll, false); r.answer != nil {
			t.Errorf("poll on an awake app got %d, want to reach the app", r.status())
		}
		if r := do(context.Background(), p, mon, false); r.answer != nil {
			t.Errorf("monitor on an awake app got %d, want to reach the app", r.status())
		}
		if !p.app.lastAccessTime().Equal(before) {
			t.Errorf("a poll or a monitor counted as traffic")
		}
	})
}

func TestTransformRequest_DropsTheReaperHeader(t *testing.T) {
	out := httptest.NewRequest("GET", "/", nil)
	out.Header.Set(HeaderReaper, "poll")
	if err := (&Plugin{}).TransformRequest(nil, out); err != nil || out.Header.Get(HeaderReaper) != "" {
		t.Errorf("header still there: %q %v", out.Header.Get(HeaderReaper), err)
	}
}

func (a *app) lastAccessTime() time.Time {
	if n := a.lastAccess.Load(); n > 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func TestTransformResponse_PlatformNotReadyIsNeverTheAppsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, upApp("app"), "")
		e.engine.opts.NotReadyYet = func(r *http.Response) bool {
			return r.StatusCode == 404 && r.Header.Get("X-CleverCloudUpgrade") == "true"
		}
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		resp := func(code int, upgrade string) *http.Response {
			h := http.Header{}
			if upgrade != "" {
				h.Set("X-CleverCloudUpgrade", upgrade)
			}
			return &http.Response{StatusCode: code, Header: h, Body: http.NoBody}
		}
		ex := &plugin.Exchange{Request: apiRequest("GET", "/"), ID: "req-9"}

		own := resp(404, "")
		if err := p.TransformResponse(ex, own); err != nil || own.StatusCode != 404 {
			t.Errorf("the app's own 404 was changed: %d %v", own.StatusCode, err)
		}
		edge := resp(404, "true")
		if err := p.TransformResponse(ex, edge); err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(edge.Body)
		if edge.StatusCode != 503 || edge.Header.Get(HeaderStatus) != "WaitingForUp" || edge.Header.Get("Retry-After") != "5" ||
			!strings.Contains(string(body), "waking up") || edge.ContentLength != int64(len(body)) {
			t.Errorf("the platform's 404 became %d %v %s", edge.StatusCode, edge.Header, body)
		}
		// A browser gets the waiting page.
		bex := &plugin.Exchange{Request: browserRequest(), ID: "req-10"}
		page := resp(404, "true")
		if err := p.TransformResponse(bex, page); err != nil || page.StatusCode != 503 || page.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("browser: %d %v %v", page.StatusCode, page.Header, err)
		}
	})
}

func TestWake_AskedAtOnceAfterTheAppWentBackToSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		if r := do(context.Background(), p, apiRequest("GET", "/"), false); r.answer != nil {
			t.Fatalf("first wake: %d", r.status())
		}
		// Stopped from outside three seconds after that ask.
		time.Sleep(3 * time.Second)
		fake.Set("app", paastest.App{State: paas.StateShouldBeDown})
		settle()
		begin := time.Now()
		if r := do(context.Background(), p, apiRequest("GET", "/"), false); r.answer != nil {
			t.Fatalf("second wake: %d", r.status())
		}
		if waited := time.Since(begin); waited != 0 {
			t.Errorf("the second wake waited %v for the first ask's interval", waited)
		}
		if n := fake.Count("start", "app"); n != 2 {
			t.Errorf("starts = %d, want 2", n)
		}
	})
}

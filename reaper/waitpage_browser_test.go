package reaper

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/page"
	"github.com/reapergw/reaper/plugin"
)

// browserWait bounds every wait on the browser: generous, since the machine is
// shared.
const browserWait = 20 * time.Second

// pageRig is a node in front of one sleeping app ("app", on a fake platform
// whose starts the test finishes by hand) behind a real loopback gateway, for a
// real browser. The app answers every request with a page holding #app, and
// the rig notes when each reached it.
type pageRig struct {
	engine *Engine
	store  *MemStore
	fake   *paastest.Fake
	front  *httptest.Server
	app    *app

	mu  sync.Mutex
	got []appHit
}

type appHit struct {
	method, path string
	at           time.Time
}

// newPageRig starts the rig: route holds extra keys of the route (YAML), cfg
// the reaper plugin's config (a YAML flow mapping), and platform, if not nil,
// sets the fake platform up before anything observes it.
func newPageRig(t *testing.T, route, cfg string, platform func(*paastest.Fake)) *pageRig {
	t.Helper()
	rig := &pageRig{fake: paastest.New("app")}
	rig.fake.Manual = true
	if platform != nil {
		platform(rig.fake)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rig.mu.Lock()
		rig.got = append(rig.got, appHit{r.Method, r.URL.Path, time.Now()})
		rig.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// No icon: a browser would ask the app for /favicon.ico, a request that wakes it once it sleeps.
		io.WriteString(w, `<!doctype html><link rel="icon" href="data:,"><title>the app</title><p id="app">hello from the app</p>`)
	}))
	t.Cleanup(backend.Close)
	store := newTestStore(t)
	rig.store = store
	rig.engine = NewEngine(EngineOptions{Node: "n1", Store: store, PollInterval: 50 * time.Millisecond})
	job := NewJob(JobOptions{Engine: rig.engine, Store: store, PaaS: rig.fake, FastInterval: 50 * time.Millisecond, FullInterval: time.Second})
	rig.engine.SetAsker(job)
	opts := plugin.BuildOptions{Logger: slog.New(slog.DiscardHandler), Services: map[string]any{ServiceName: rig.engine}}
	rt, err := plugin.BuildRouter(context.Background(), routesYAML(t, `
- id: r1
  frontend: {domains: ["*"]}
  backend: {targets: ["`+backend.URL+`"]}
`+route+`
  plugins:
    - plugin: reaper
      config: `+cfg+`
`), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	gw := plugin.NewGateway(plugin.GatewayOptions{})
	gw.Swap(rt)
	rig.front = httptest.NewUnstartedServer(gw)
	gw.EnableParking(rig.front.Config)
	rig.front.Start()
	t.Cleanup(rig.front.Close)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); rig.engine.Run(ctx) }()
	go func() { defer wg.Done(); job.Run(ctx, 0) }()
	t.Cleanup(func() { rig.engine.Shutdown(); drainParked(t, gw); cancel(); wg.Wait() })
	rig.app = rig.engine.app("app")
	testwait.For(t, 5*time.Second, "the app is seen Down", func() bool { return rig.app.status() == StatusDown })
	return rig
}

// drainParked waits until the requests the engine's shutdown answered are handed
// back to the front server, as a node does before its server shuts down: a
// connection handed back while httptest's Close waits for its connections makes
// it misuse its WaitGroup.
func drainParked(t *testing.T, gw *plugin.Gateway) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.Drain(ctx); err != nil {
		t.Errorf("parked requests not handed back at the end: %v", err)
	}
}

// pageLoads are the requests for the page the app received, from its i-th on.
func (rig *pageRig) pageLoads(method string) []appHit {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	var out []appHit
	for _, h := range rig.got {
		if h.method == method && h.path == "/" {
			out = append(out, h)
		}
	}
	return out
}

// upSeen is when the node saw the app come up.
func (rig *pageRig) upSeen() time.Time { return time.Unix(0, rig.app.upSeen.Load()) }

// boot wakes the app through the gateway (a held request), finishes its start
// after d, then stops it from outside and waits until the node sees it Down: one
// measured boot of about d.
func (rig *pageRig) boot(t *testing.T, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(rig.front.URL + "/api")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	testwait.For(t, browserWait, "the app wakes", func() bool { return rig.app.status() == StatusWaitingForUp })
	time.Sleep(d) // the boot's length, measured by the node
	rig.fake.FinishStart("app")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rig.stop(t)
}

// stop stops the app from outside, once the job has cleared the wake asks made
// while it woke (a page's polls and stream ask again while it wakes, as the
// reference's do, and an ask still pending would wake it again), and waits
// until the node sees it Down.
func (rig *pageRig) stop(t *testing.T) {
	t.Helper()
	testwait.For(t, browserWait, "the wake asks are cleared", func() bool {
		asks, err := rig.store.WakeAsks(context.Background())
		_, pending := asks["app"]
		return err == nil && !pending
	})
	rig.fake.Set("app", paastest.App{State: paas.StateShouldBeDown})
	testwait.For(t, browserWait, "the app is seen Down", func() bool { return rig.app.status() == StatusDown })
}

// pageOpts are how a test's browser tab differs from a default one.
type pageOpts struct {
	lang, scheme      string // Accept-Language, prefers-color-scheme
	blockEvents, noJS bool   // the live progress blocked, scripts off
	width             int
}

// openPage opens a tab with the options o.
func openPage(t *testing.T, b *chrometest.Browser, o pageOpts) *chrometest.Page {
	t.Helper()
	p := b.NewPage(t)
	type call struct {
		method string
		params any
	}
	calls := []call{{"Network.enable", nil}}
	if o.lang != "" {
		calls = append(calls, call{"Network.setExtraHTTPHeaders", map[string]any{"headers": map[string]string{"Accept-Language": o.lang}}})
	}
	if o.blockEvents {
		calls = append(calls, call{"Network.setBlockedURLs", map[string]any{"urls": []string{"*" + WellKnownEventsPath + "*"}}})
	}
	if o.noJS {
		calls = append(calls, call{"Emulation.setScriptExecutionDisabled", map[string]any{"value": true}})
	}
	if o.scheme != "" {
		calls = append(calls, call{"Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": o.scheme}}}})
	}
	if o.width != 0 {
		calls = append(calls, call{"Emulation.setDeviceMetricsOverride", map[string]any{"width": o.width, "height": 760, "deviceScaleFactor": 1, "mobile": o.width < 600}})
	}
	for _, c := range calls {
		if err := p.Call(c.method, c.params, nil); err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
	}
	return p
}

// screenshot writes the page to $REAPER_SCREENSHOT_DIR/name.png, when set, for
// a person to look at.
func screenshot(t *testing.T, p *chrometest.Page, name string) {
	t.Helper()
	dir := os.Getenv("REAPER_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	png, err := p.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

func evalText(t *testing.T, p *chrometest.Page, js string) string {
	t.Helper()
	var v any
	if err := p.EvalInto(js, &v); err != nil {
		t.Fatalf("eval %s: %v", js, err)
	}
	return fmt.Sprint(v)
}

// With the live progress, the page reaches the app as soon as the requests for
// it go through (the app up, no ready delay), not at its next poll: well within
// one poll interval. (How fast, in milliseconds, is a speed figure: it is logged
// here, and a timed bound on a shared, loaded machine would only be noise.)
func TestWaitingPage_ReachesTheAppWithinMillisecondsOfReady(t *testing.T) {
	b := chrometest.Start(t)
	rig := newPageRig(t, "", `{app_id: app, ready_delay: 0s, fail_timeout: 60s}`, nil)
	p := openPage(t, b, pageOpts{})
	if err := p.Navigate(rig.front.URL + "/"); err != nil {
		t.Fatal(err)
	}
	p.WaitFor(t, `document.documentElement.dataset.live === "events" && document.documentElement.dataset.status === "WaitingForUp"`, browserWait)
	p.WaitFor(t, `document.querySelector('[data-phase="accepted"]').hasAttribute("data-done")`, browserWait)
	if n := len(rig.pageLoads(http.MethodGet)); n != 0 {
		t.Fatalf("the app got %d page loads while it slept", n)
	}
	rig.fake.FinishStart("app")
	p.WaitFor(t, `document.getElementById("app") !== null`, browserWait)
	loads := rig.pageLoads(http.MethodGet)
	if len(loads) != 1 {
		t.Fatalf("the app got %d page loads, want 1", len(loads))
	}
	lag := loads[0].at.Sub(rig.upSeen())
	t.Logf("the page reached the app %v after the node saw it up", lag)
	if lag >= page.DefaultPollInterval/2 {
		t.Errorf("the page reached the app %v after it was ready, want well within its poll interval (%v): did it wait for a poll?", lag, page.DefaultPollInterval)
	}
}

// Without the live progress (a proxy that blocks it), the page polls as the
// reference's does, and still reaches the app; without JavaScript, its meta
// refresh does.
func TestWaitingPage_ReachesTheAppWithoutEventsOrScripts(t *testing.T) {
	b := chrometest.Start(t)
	for _, tt := range []struct {
		name string
		o    pageOpts
		wait string // a condition that holds while the page waits
	}{
		{"events blocked", pageOpts{blockEvents: true}, `document.documentElement.dataset.live === "poll"`},
		{"scripts off", pageOpts{noJS: true}, `document.querySelector("noscript") !== null`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rig := newPageRig(t, "", `{app_id: app, ready_delay: 0s, fail_timeout: 60s}`, nil)
			p := openPage(t, b, tt.o)
			if err := p.Navigate(rig.front.URL + "/"); err != nil {
				t.Fatal(err)
			}
			p.WaitFor(t, tt.wait, browserWait)
			testwait.For(t, browserWait, "the app wakes", func() bool { return rig.app.status() == StatusWaitingForUp })
			rig.fake.FinishStart("app")
			p.WaitFor(t, `document.getElementById("app") !== null`, browserWait)
			t.Logf("reached the app %v after it was up", time.Since(rig.upSeen()))
		})
	}
}

// After a few measured boots the page says how long the app usually takes,
// fills a bar against it, and says so when this boot runs longer; in Arabic,
// right to left.
func TestWaitingPage_ShowsTheLearnedETA(t *testing.T) {
	b := chrometest.Start(t)
	rig := newPageRig(t, "", `{app_id: app, ready_delay: 0s, fail_timeout: 60s}`, nil)
	for range 3 {
		rig.boot(t, 600*time.Millisecond)
	}
	if eta, n := rig.engine.ETA("app"); n != 3 || eta < 600*time.Millisecond || eta > time.Second {
		t.Fatalf("ETA after 3 boots of 600 ms: %v over %d", eta, n)
	}
	for _, o := range []pageOpts{{lang: "en", scheme: "light"}, {lang: "ar", scheme: "dark"}} {
		t.Run(o.lang, func(t *testing.T) {
			p := openPage(t, b, o)
			if err := p.Navigate(rig.front.URL + "/"); err != nil {
				t.Fatal(err)
			}
			p.WaitFor(t, `document.documentElement.dataset.live === "events" && !document.getElementById("reaper-eta").hidden`, browserWait)
			if got := evalText(t, p, `document.querySelector(".eta-usual .eta-n").textContent`); got != "1" {
				t.Errorf("usual boot shown as %q s, want 1", got)
			}
			if o.lang == "en" {
				// Read together: on a loaded machine the page may open after this
				// wake already ran past the usual second, and say so (checked below).
				got := evalText(t, p, `document.documentElement.dataset.eta + ": " + document.querySelector("#reaper-eta p").innerText`)
				if got != "usual: Usually ready in about 1 s" && got != "late: Taking longer than usual (usually about 1 s)" {
					t.Errorf("ETA state and line %q", got)
				}
			} else {
				got := evalText(t, p, `[getComputedStyle(document.getElementById("reaper-bar")).direction,
					document.querySelector('[data-phase="asked"] .ph-t').getBoundingClientRect().left <
					document.querySelector('[data-phase="asked"] span').getBoundingClientRect().left].join()`)
				if got != "rtl,true" {
					t.Errorf("in Arabic: bar direction and time left of its label = %q, want rtl,true", got)
				}
			}
			screenshot(t, p, "live-"+o.lang+"-"+o.scheme+"-waking")
			// Longer than usual: said so, the bar full.
			p.WaitFor(t, `document.documentElement.dataset.eta === "late" && document.getElementById("reaper-bar").value === 100`, browserWait)
			if o.lang == "en" {
				if got := evalText(t, p, `document.querySelector("#reaper-eta p").innerText`); got != "Taking longer than usual (usually about 1 s)" {
					t.Errorf("late ETA line %q", got)
				}
			}
			screenshot(t, p, "live-"+o.lang+"-"+o.scheme+"-late")
			rig.fake.FinishStart("app")
			p.WaitFor(t, `document.getElementById("app") !== null`, browserWait)
			rig.stop(t)
		})
	}
}

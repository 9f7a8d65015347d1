package reaper

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

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
		if fake.Count("start", "app") != 0 || !p.route.a.lastAccessTime().IsZero() {
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
		if p.route.a.lastAccessTime().IsZero() {
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
		before := p.route.a.lastAccessTime()
		time.Sleep(time.Minute)
		if r := do(context.Background(), p, poll, false); r.answer != nil {
			t.Errorf("poll on an awake app got %d, want to reach the app", r.status())
		}
		if r := do(context.Background(), p, mon, false); r.answer != nil {
			t.Errorf("monitor on an awake app got %d, want to reach the app", r.status())
		}
		if !p.route.a.lastAccessTime().Equal(before) {
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

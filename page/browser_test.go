package page

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
)

func evalString(t *testing.T, p *chrometest.Page, js string) string {
	t.Helper()
	var v string
	if err := p.EvalInto(js, &v); err != nil {
		t.Fatalf("eval %s: %v", js, err)
	}
	return v
}

// visibleStatus is the text of the status line as the user sees it: innerText skips hidden variants.
func visibleStatus(t *testing.T, p *chrometest.Page) string {
	return strings.TrimSpace(evalString(t, p, `document.querySelector(".st").innerText`))
}

func openWaiting(t *testing.T, b *chrometest.Browser, s *scriptedServer) *chrometest.Page {
	t.Helper()
	p := b.NewPage(t)
	if err := p.Navigate(s.URL + "/"); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	return p
}

func TestWaitingPage_InChromium(t *testing.T) {
	b := chrometest.Start(t)
	en := locales[0].Messages
	base := Waiting{AppName: "shop", Status: "Down", RequestID: "req-1", Node: "node-1", PollInterval: testPoll}

	t.Run("marker polls keep waiting, then the app's 200 reloads", func(t *testing.T) {
		s := newScriptedServer(t, base, "en", answer{status: 503, header: http.Header{marker: {"WaitingForUp"}}})
		p := openWaiting(t, b, s)
		s.morePolls(t, 3)
		p.WaitFor(t, `document.documentElement.dataset.status === "WaitingForUp"`, waitLong)
		if got := evalString(t, p, `document.documentElement.dataset.state`); got != StateWaiting {
			t.Errorf("data-state = %q, want waiting", got)
		}
		if got := visibleStatus(t, p); got != en.Waking {
			t.Errorf("status line = %q, want %q", got, en.Waking)
		}
		p.WaitFor(t, `!document.getElementById("elapsed").hidden && +document.getElementById("n").textContent >= 1`, waitLong)

		s.answer(503, marker, "WaitingForShutdown")
		p.WaitFor(t, `document.documentElement.dataset.status === "WaitingForShutdown"`, waitLong)
		if got := visibleStatus(t, p); got != en.GoingToSleep {
			t.Errorf("status line = %q, want %q", got, en.GoingToSleep)
		}
		if n := s.count(http.MethodGet); n != 1 {
			t.Fatalf("GET count while the gateway answers = %d, want 1", n)
		}

		s.answer(200)
		s.waitCount(t, http.MethodGet, 2)
		p.WaitFor(t, `document.getElementById("app") !== null`, waitLong)
		// Up to the reload, the waiting page asked for nothing but its own URL (no favicon either); the
		// app's page may ask for what it likes.
		pageGets := 0
		for _, q := range s.requests() {
			if q.method == http.MethodGet && q.path == "/" {
				if pageGets++; pageGets == 2 {
					break
				}
			}
			if q.path != "/" {
				t.Errorf("waiting page asked for %s %s: it must load nothing but its own URL", q.method, q.path)
			}
		}
	})

	t.Run("503 and the 404 of an app with no instance show almost ready", func(t *testing.T) {
		s := newScriptedServer(t, base, "en", answer{status: 503})
		p := openWaiting(t, b, s)
		p.WaitFor(t, `document.documentElement.dataset.state === "almost"`, waitLong)
		if got := visibleStatus(t, p); got != en.Almost {
			t.Errorf("status line = %q, want %q", got, en.Almost)
		}

		s.answer(503, marker, "Down")
		p.WaitFor(t, `document.documentElement.dataset.state === "waiting"`, waitLong)
		s.answer(404, "X-CleverCloudUpgrade", "true")
		p.WaitFor(t, `document.documentElement.dataset.state === "almost"`, waitLong)
		s.morePolls(t, 3)
		if got := evalString(t, p, `document.documentElement.dataset.state`); got != StateAlmost {
			t.Errorf("data-state after more upgrade 404s = %q, want almost", got)
		}
		if n := s.count(http.MethodGet); n != 1 {
			t.Errorf("GET count = %d, want 1: the page reloaded on a 5xx or an upgrade 404", n)
		}
	})

	t.Run("network errors keep polling without a change", func(t *testing.T) {
		s := newScriptedServer(t, base, "en", answer{status: 503, header: http.Header{marker: {"WaitingForUp"}}})
		p := openWaiting(t, b, s)
		p.WaitFor(t, `document.documentElement.dataset.status === "WaitingForUp"`, waitLong)
		s.dropPolls()
		s.morePolls(t, 3)
		if got := evalString(t, p, `document.documentElement.dataset.state + "/" + document.documentElement.dataset.status`); got != "waiting/WaitingForUp" {
			t.Errorf("state after network errors = %q, want waiting/WaitingForUp", got)
		}
		if n := s.count(http.MethodGet); n != 1 {
			t.Errorf("GET count = %d, want 1", n)
		}
		s.answer(200)
		s.waitCount(t, http.MethodGet, 2)
	})

	for _, tt := range []struct {
		name   string
		status int
		kv     []string
	}{
		{"own 404", 404, nil},
		{"404 with upgrade false", 404, []string{"X-CleverCloudUpgrade", "false"}},
		{"401", 401, nil},
		{"302 to login", 302, []string{"Location", "/login"}},
		{"200", 200, nil},
	} {
		t.Run("the app's "+tt.name+" reloads", func(t *testing.T) {
			s := newScriptedServer(t, base, "en", answer{status: 503, header: http.Header{marker: {"Down"}}})
			p := openWaiting(t, b, s)
			s.morePolls(t, 1)
			s.answer(tt.status, tt.kv...)
			s.waitCount(t, http.MethodGet, 2)
			p.WaitFor(t, `document.getElementById("app") !== null`, waitLong)
			for _, q := range s.requests() {
				if q.path == "/login" {
					t.Errorf("the page followed the redirect to %s instead of reloading", q.path)
				}
			}
		})
	}

	t.Run("Error polls at the error interval, then back to the normal one", func(t *testing.T) {
		const errorPoll = 1500 * time.Millisecond
		w := base
		w.ErrorPollInterval = errorPoll
		s := newScriptedServer(t, w, "en", answer{status: 503, header: http.Header{marker: {"WaitingForUp"}}})
		p := openWaiting(t, b, s)
		s.morePolls(t, 3)

		s.answer(503, marker, "Error")
		p.WaitFor(t, `document.documentElement.dataset.state === "error"`, waitLong)
		if got := strings.TrimSpace(evalString(t, p, `document.querySelector("h1").innerText`)); got != "shop could not be started" {
			t.Errorf("heading in error = %q", got)
		}
		if got := evalString(t, p, `document.title`); got != "shop could not be started" {
			t.Errorf("title in error = %q", got)
		}
		if got := visibleStatus(t, p); got != en.Error {
			t.Errorf("status line = %q, want %q", got, en.Error)
		}
		if got := evalString(t, p, `getComputedStyle(document.querySelector("main>.lead")).display`); got != "none" {
			t.Errorf("the lead (it opens as soon as it is ready) in error: display %q, want hidden", got)
		}
		if got := evalString(t, p, `getComputedStyle(document.querySelector(".sp")).animationName`); got != "none" {
			t.Errorf("spinner animation in error = %q, want none", got)
		}
		s.morePolls(t, 2)

		s.answer(503, marker, "WaitingForUp")
		p.WaitFor(t, `document.documentElement.dataset.state === "waiting"`, waitLong)
		s.morePolls(t, 3)

		var errorGaps, normalGaps []time.Duration
		var polls []seen
		for _, q := range s.requests() {
			if q.method == http.MethodHead {
				polls = append(polls, q)
			}
		}
		for i := 0; i+1 < len(polls); i++ {
			gap := polls[i+1].at.Sub(polls[i].at)
			if polls[i].answered.header.Get(marker) == "Error" {
				errorGaps = append(errorGaps, gap)
			} else {
				normalGaps = append(normalGaps, gap)
			}
		}
		if len(errorGaps) < 2 || len(normalGaps) < 4 {
			t.Fatalf("gaps after Error %v, after other answers %v: too few", errorGaps, normalGaps)
		}
		t.Logf("gaps after Error %v, after other answers %v", errorGaps, normalGaps)
		if longest := maxOf(normalGaps); minOf(errorGaps) <= longest {
			t.Errorf("shortest gap after Error %v is not longer than the longest normal gap %v", minOf(errorGaps), longest)
		}
		// A timer never fires early; the margin covers the clocks of two processes.
		if minOf(errorGaps) < errorPoll-100*time.Millisecond {
			t.Errorf("shortest gap after Error %v, want about %v", minOf(errorGaps), errorPoll)
		}
		if last := polls[len(polls)-1]; last.answered.header.Get(marker) != "WaitingForUp" {
			t.Errorf("last poll answered %v, want the normal interval back after WaitingForUp", last.answered.header)
		}
	})

	t.Run("the poll is a HEAD with the poll headers and the page's cookies", func(t *testing.T) {
		s := newScriptedServer(t, base, "en", answer{status: 503, header: http.Header{marker: {"Down"}}})
		openWaiting(t, b, s)
		s.morePolls(t, 1)
		var poll seen
		for _, q := range s.requests() {
			if q.method != http.MethodGet {
				poll = q
				break
			}
		}
		if poll.method != http.MethodHead || poll.path != "/" {
			t.Errorf("poll = %s %s, want HEAD /", poll.method, poll.path)
		}
		for k, want := range map[string]string{"CleverCloud-Reaper": "poll", "Accept": "application/json"} {
			if got := poll.header.Get(k); got != want {
				t.Errorf("poll header %s = %q, want %q", k, got, want)
			}
		}
		if got := poll.header.Get("Cookie"); !strings.Contains(got, "sid=abc123") {
			t.Errorf("poll Cookie = %q, want the cookie set by the page's GET", got)
		}
		// cache: "no-store" makes the browser ask every cache on the way not to answer from a copy.
		if got := poll.header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("poll Cache-Control = %q, want no-cache", got)
		}
	})

	t.Run("without JavaScript the meta refresh reloads", func(t *testing.T) {
		w := base
		w.PollInterval = time.Second // the refresh takes whole seconds
		s := newScriptedServer(t, w, "en", answer{status: 503, header: http.Header{marker: {"Down"}}})
		p := b.NewPage(t)
		if err := p.Call("Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Navigate(s.URL + "/"); err != nil {
			t.Fatal(err)
		}
		s.waitCount(t, http.MethodGet, 2)
		if n := s.count(http.MethodHead); n != 0 {
			t.Errorf("%d polls with scripts disabled, want 0", n)
		}
	})

	// A stream that never delivers (a proxy that buffers it), or one that breaks after its first event: the
	// page polls as the reference's does, and reaches the app.
	for name, events := range map[string]http.HandlerFunc{
		"a buffered stream": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			<-r.Context().Done()
		},
		"a stream that breaks": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(AppendEvent(nil, EventState, "WaitingForUp", StateWaiting, Progress{Asked: true, Waited: time.Second}))
			rc := http.NewResponseController(w)
			rc.Flush()
			if conn, _, err := rc.Hijack(); err == nil {
				conn.Close()
			}
		},
	} {
		t.Run(name+" falls back to polling", func(t *testing.T) {
			w := base
			w.EventsURL = "/.well-known/reaper/events"
			s := newScriptedServer(t, w, "en", answer{status: 503, header: http.Header{marker: {"WaitingForUp"}}})
			s.events = events
			p := openWaiting(t, b, s)
			p.WaitFor(t, `document.documentElement.dataset.live === "poll"`, waitLong)
			s.morePolls(t, 2)
			s.answer(200)
			s.waitCount(t, http.MethodGet, 2)
			p.WaitFor(t, `document.getElementById("app") !== null`, waitLong)
		})
	}

	t.Run("reduced motion stops every animation; the status is announced", func(t *testing.T) {
		w := base
		w.Status = "WaitingForUp"
		w.Progress = Progress{Asked: true, Waited: time.Second, Accepted: time.Millisecond, ETA: 5 * time.Second, Samples: 2}
		s := newScriptedServer(t, w, "en", answer{status: 503, header: http.Header{marker: {"WaitingForUp"}}})
		p := b.NewPage(t)
		media := map[string]any{"features": []map[string]string{{"name": "prefers-reduced-motion", "value": "reduce"}}}
		if err := p.Call("Emulation.setEmulatedMedia", media, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Navigate(s.URL + "/"); err != nil {
			t.Fatal(err)
		}
		got := evalString(t, p, `[getComputedStyle(document.querySelector(".sp")).animationName,
			getComputedStyle(document.querySelector('[data-phase="up"]'), "::before").animationName,
			document.querySelector(".st").getAttribute("role"), document.querySelector(".st").getAttribute("aria-live"),
			document.getElementById("reaper-bar").getAttribute("aria-hidden")].join()`)
		if got != "none,none,status,polite,true" {
			t.Errorf("animations, status role and live region, bar = %q", got)
		}
	})

	t.Run("refused by a wake limit: says so, polls nothing, reloads after the wait", func(t *testing.T) {
		limited := base
		limited.EventsURL = ""
		limited.RetryAfter = 2 * time.Second
		s := newScriptedServer(t, limited, "fr", answer{status: 503, header: http.Header{marker: {"Down"}}})
		p := openWaiting(t, b, s)
		fr := locales[1].Messages
		if got, want := visibleStatus(t, p), strings.Replace(fr.Limited, PlaceholderSeconds, "2", 1); got != want {
			t.Errorf("status line = %q, want %q", got, want)
		}
		if got, want := strings.TrimSpace(evalString(t, p, `document.querySelector("h1").innerText`)), strings.Replace(fr.LimitedTitle, PlaceholderApp, "shop", 1); got != want {
			t.Errorf("heading = %q, want %q", got, want)
		}
		if got := evalString(t, p, `document.title + "|" + getComputedStyle(document.getElementById("reaper-phases")).display + "|" + getComputedStyle(document.getElementById("elapsed")).display + "|" + getComputedStyle(document.querySelector(".sp")).animationName`); got != strings.Replace(fr.LimitedTitle, PlaceholderApp, "shop", 1)+"|none|none|none" {
			t.Errorf("title, phases, elapsed, spinner = %q: want the limited title, the rest hidden and still", got)
		}
		// The reload after 2 s reaches the app (the scripted server's second GET).
		p.WaitFor(t, `document.getElementById("app") !== null`, waitLong)
		if n := s.count(http.MethodHead); n != 0 {
			t.Errorf("%d polls: a page refused by a wake limit must not poll (a poll asks a wake)", n)
		}
		reqs := s.requests()
		if len(reqs) < 2 || reqs[1].at.Sub(reqs[0].at) < 2*time.Second {
			t.Errorf("the page reloaded too soon: %v", reqs)
		}
	})

	t.Run("Arabic page is right to left", func(t *testing.T) {
		s := newScriptedServer(t, base, "ar", answer{status: 503, header: http.Header{marker: {"Down"}}})
		p := openWaiting(t, b, s)
		if got := evalString(t, p, `getComputedStyle(document.body).direction + " " + document.documentElement.lang`); got != "rtl ar" {
			t.Errorf("direction and lang = %q, want rtl ar", got)
		}
	})
}

func minOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = min(m, d)
	}
	return m
}

func maxOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = max(m, d)
	}
	return m
}

// TestWaitingPage_Screenshots writes screenshots of the page to $REAPER_SCREENSHOT_DIR, for a person to look
// at. Skipped when the variable is unset.
func TestWaitingPage_Screenshots(t *testing.T) {
	dir := os.Getenv("REAPER_SCREENSHOT_DIR")
	if dir == "" {
		t.Skip("set REAPER_SCREENSHOT_DIR to write screenshots of the waiting page")
	}
	b := chrometest.Start(t)
	waking := Progress{Asked: true, Waited: 4 * time.Second, Accepted: 120 * time.Millisecond, ETA: 9 * time.Second, Samples: 5}
	late := Progress{Asked: true, Waited: 21 * time.Second, Accepted: 150 * time.Millisecond, Up: 19800 * time.Millisecond, ETA: 9 * time.Second, Samples: 5}
	for _, shot := range []struct {
		name, lang, status, scheme string
		width                      int
		progress                   Progress
		retry                      time.Duration
	}{
		{"en-light", "en", "WaitingForUp", "light", 1000, waking, 0},
		{"en-first-boot", "en", "Down", "light", 1000, Progress{}, 0},
		{"ar-light", "ar", "WaitingForUp", "light", 1000, waking, 0},
		{"en-dark", "en", "WaitingForShutdown", "dark", 1000, Progress{ETA: 9 * time.Second, Samples: 3}, 0},
		{"en-late-dark", "en", "Up", "dark", 1000, late, 0},
		{"he-late-dark", "he", "Up", "dark", 1000, late, 0},
		{"ar-error-dark", "ar", "Error", "dark", 1000, waking, 0},
		{"de-phone", "de", "WaitingForUp", "light", 375, waking, 0},
		{"fr-limited", "fr", "Down", "light", 1000, Progress{}, 42 * time.Second},
		{"he-limited-dark", "he", "Down", "dark", 375, Progress{}, 42 * time.Second},
		{"fa-light", "fa-IR,fa;q=0.9", "WaitingForUp", "light", 1000, waking, 0},
		{"zh-Hant-light", "zh-TW,zh;q=0.9", "WaitingForUp", "light", 1000, waking, 0},
		{"ko-phone-dark", "ko-KR", "WaitingForUp", "dark", 375, waking, 0},
	} {
		t.Run(shot.name, func(t *testing.T) {
			w := Waiting{AppName: "my-shop-frontend", Status: shot.status, RequestID: "7f3c9a1e-52b4-4c1d-9e0a-3b8f2d6c41aa",
				Node: "reaper-node-2", PollInterval: time.Hour, Progress: shot.progress, RetryAfter: shot.retry}
			s := newScriptedServer(t, w, shot.lang, answer{status: 503, header: http.Header{marker: {shot.status}}})
			p := b.NewPage(t)
			for _, c := range []struct {
				method string
				params any
			}{
				{"Emulation.setDeviceMetricsOverride", map[string]any{"width": shot.width, "height": 720, "deviceScaleFactor": 1, "mobile": shot.width < 600}},
				{"Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": shot.scheme}}}},
			} {
				if err := p.Call(c.method, c.params, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Navigate(s.URL + "/"); err != nil {
				t.Fatal(err)
			}
			p.WaitFor(t, `+document.getElementById("n").textContent >= 2`, waitLong)
			png, err := p.Screenshot()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "waiting-"+shot.name+".png")
			if err := os.WriteFile(path, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", path)
		})
	}
}

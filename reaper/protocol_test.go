package reaper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

func TestClassify(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MonitoringFilters = []MonitoringFilter{
		{Source: "user_agent", Regex: "(?i)uptimerobot"},
		{Source: "path", Regex: "^/healthz$"},
	}
	var errs conf.Errors
	cfg.Validate("cfg", &errs)
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	const html = "text/html,application/xhtml+xml;q=0.9"
	tests := []struct {
		name           string
		method, path   string
		reaper, accept string
		ua             string
		want           requestKind
	}{
		{"plain GET", "GET", "/", "", "", "", kindAPI},
		{"JSON GET", "GET", "/", "", "application/json", "", kindAPI},
		{"page load", "GET", "/", "", html, "", kindBrowser},
		{"HEAD of a page", "HEAD", "/", "", html, "", kindBrowser},
		{"POST of a form, even asking for HTML", "POST", "/", "", html, "", kindAPI},
		{"status", "GET", "/", "status", "", "", kindStatus},
		{"status in capitals", "GET", "/", "STATUS", "", "", kindStatus},
		{"poll", "HEAD", "/", "poll", "application/json", "", kindPoll},
		{"poll in mixed case", "HEAD", "/", "Poll", "", "", kindPoll},
		{"an unknown reaper header value is ignored", "GET", "/", "wake", html, "", kindBrowser},
		{"monitor by user agent", "GET", "/", "", html, "UptimeRobot/2.0", kindMonitor},
		{"monitor by path", "GET", "/healthz", "", "", "", kindMonitor},
		{"a poll that a filter matches is a poll", "HEAD", "/healthz", "poll", "", "", kindPoll},
		{"a status request that a filter matches is a status request", "GET", "/", "status", "", "UptimeRobot", kindStatus},
		{"robots.txt", "GET", "/robots.txt", "", "", "Googlebot", kindNotActivity},
		{"the favicon, asked by a page", "GET", "/favicon.ico", "", "image/avif,image/*", "", kindNotActivity},
		{"a sitemap with a query is still the sitemap", "GET", "/sitemap.xml?page=2", "", "", "", kindNotActivity},
		{"a path that only begins like robots.txt", "GET", "/robots.txt.bak", "", "", "", kindAPI},
		{"a monitor's robots.txt is a monitor's", "GET", "/robots.txt", "", "", "UptimeRobot", kindMonitor},
		{"a poll of robots.txt is a poll", "HEAD", "/robots.txt", "poll", "", "", kindPoll},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.reaper != "" {
				r.Header.Set(HeaderReaper, tc.reaper)
			}
			if tc.accept != "" {
				r.Header.Set("Accept", tc.accept)
			}
			if tc.ua != "" {
				r.Header.Set("User-Agent", tc.ua)
			}
			if got := cfg.classify(r); got != tc.want {
				t.Errorf("classify = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAnswerFor_Table checks the protocol table for every kind × status × route
// setting, against the rules of the reference protocol written out one by one.
func TestAnswerFor_Table(t *testing.T) {
	kinds := []requestKind{kindAPI, kindBrowser, kindMonitor, kindPoll, kindStatus, kindNotActivity}
	if len(kinds) != len(kindNames) {
		t.Fatalf("the test knows %d kinds, the code %d: add the new kind here", len(kinds), len(kindNames))
	}
	for _, k := range kinds {
		for _, st := range Statuses {
			for _, page := range []bool{true, false} {
				for _, api := range []string{BehaviorHold, BehaviorUnavailable} {
					got := answerFor(k, st, page, api)
					want := expectedVerdict(k, st, page, api)
					if got != want {
						t.Errorf("%s for %s (waiting page %v, api %s) = %+v, want %+v", k, st, page, api, got, want)
					}
				}
			}
		}
	}
}

// expectedVerdict is the protocol as docs/reaper.md states it, one rule per line.
func expectedVerdict(k requestKind, st Status, page bool, api string) verdict {
	sleeping := st == StatusDown || st == StatusWaitingForShutdown || st == StatusWaitingForUp
	switch {
	case k == kindStatus:
		return verdict{reply: replyStatus}
	case k == kindPoll && sleeping:
		return verdict{reply: replyPoll, wake: true}
	case k == kindPoll && st == StatusError:
		return verdict{reply: replyPoll}
	case k == kindPoll:
		return verdict{reply: replyForwardQuiet}
	case k == kindMonitor && sleeping:
		return verdict{reply: replyMonitoring}
	case k == kindMonitor:
		return verdict{reply: replyForwardQuiet}
	case k == kindNotActivity && !sleeping:
		return verdict{reply: replyForwardQuiet}
	case k == kindNotActivity && api == BehaviorUnavailable: // woken, never traffic
		return verdict{reply: replyUnavailable, wake: true}
	case k == kindNotActivity:
		return verdict{reply: replyHold, wake: true}
	case !sleeping: // Up, Error (hands off), WaitingForInit (not known yet)
		return verdict{reply: replyForward}
	case k == kindBrowser && page:
		return verdict{reply: replyWaitingPage, touch: true, wake: true}
	case api == BehaviorUnavailable:
		return verdict{reply: replyUnavailable, touch: true, wake: true}
	}
	return verdict{reply: replyHold, touch: true, wake: true}
}

// Every reply that answers in place of the app has an answer, and none of those
// answers lets the request through.
func TestAnswer_EveryReplyHasOne(t *testing.T) {
	store, err := NewMemStore(MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	engine := NewEngine(EngineOptions{Store: store})
	p := &Plugin{Config: DefaultConfig(), engine: engine, route: &Route{e: engine, a: &app{id: "a"}}}
	for r := replyStatus; r < replyHold; r++ {
		ex := &plugin.Exchange{Request: httptest.NewRequest(http.MethodGet, "/", nil), ID: "r"}
		a, err := p.answer(ex, r, StatusDown)
		if err != nil || a == nil {
			t.Errorf("answer(%s) = %v, %v; want an answer", r, a, err)
			continue
		}
		if got := a.Header.Get(HeaderStatus); got != "Down" {
			t.Errorf("answer(%s) is marked %q, want Down", r, got)
		}
	}
	if _, err := p.answer(&plugin.Exchange{Request: httptest.NewRequest(http.MethodGet, "/", nil), ID: "r"}, replyForward, StatusUp); err == nil {
		t.Error("answer(forward) gave no error; forwarding has no answer")
	}
}

// The well-known status path is reaper's own answer on every managed host: the
// app's status for monitors that cannot send a header, never a wake, never
// traffic, 503 only in Error.
func TestWellKnownStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		for _, method := range []string{"GET", "HEAD"} {
			r := do(context.Background(), p, httptest.NewRequest(method, WellKnownStatusPath, nil), false)
			if r.status() != 200 || r.json(t)["status"] != "Down" || r.json(t)["asleep"] != true || r.answer.Header.Get(HeaderStatus) != "Down" {
				t.Fatalf("%s while asleep: %d %s", method, r.status(), r.answer.Body)
			}
		}
		if r := do(context.Background(), p, httptest.NewRequest("POST", WellKnownStatusPath, nil), false); r.status() != 405 || r.answer.Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("POST: %d %v", r.status(), r.answer.Header)
		}
		settle()
		if n := fake.Count("start", "app"); n != 0 {
			t.Fatalf("the status path woke the app (%d starts)", n)
		}
		if la, _ := e.engine.LocalTraffic("app"); !la.IsZero() {
			t.Fatalf("the status path counted as traffic (last access %v)", la)
		}
		e.engine.Apply(Record{AppID: "app", Status: StatusError, ErrorCause: "boom", Revision: 99, Term: 99})
		if r := do(context.Background(), p, httptest.NewRequest("GET", WellKnownStatusPath, nil), false); r.status() != 503 || r.json(t)["status"] != "Error" {
			t.Fatalf("in Error: %d %s; want 503", r.status(), r.answer.Body)
		}
	})
}

// A status request for an app not observed yet says Up, in its JSON as in its
// header, as the reference reaper does.
func TestStatusAnswer_WaitingForInitShowsAsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		p := e.route(config("app"))
		// Not started: the app stays WaitingForInit.
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set(HeaderReaper, "status")
		r := do(context.Background(), p, req, false)
		if r.status() != 200 || r.json(t)["status"] != "Up" || r.answer.Header.Get(HeaderStatus) != "Up" {
			t.Fatalf("status of an app not observed yet: %d %s, marker %q; want Up in both", r.status(), r.answer.Body, r.answer.Header.Get(HeaderStatus))
		}
	})
}

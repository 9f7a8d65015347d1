package reaper

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// A custom page as the reference's are written: its placeholders filled in
// ({{app_name}} with the app's name on its platform, {{status}} worded as the
// reference words it), and reaper's script added right before </body>.
func TestWaitingPage_CustomAsTheReferenceWritesThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		fake.Set("app", paastest.App{State: paas.StateShouldBeDown, Name: "Shop"})
		e := newEnv(t, fake, "")
		p := e.route(config("app", func(c *Config) {
			c.WaitingPage = `<html><head><title>{{app_name}} is starting</title></head><body>
<span id="clevercloud-reaper-status">{{status}}</span><p>{{route_name}} {{app_id}} {{ request_id }} {{node}}</p>
</body></html>`
		}))
		if got := p.appName(); got != "Route app" {
			t.Errorf("before the platform named the app, its name is %q, want the route's", got)
		}
		e.start()
		defer e.stop()
		settle()
		r := do(context.Background(), p, browserRequest(), false)
		if !strings.Contains(string(r.answer.Body), `<span id="clevercloud-reaper-status">Asleep, wake up requested</span>`) {
			t.Errorf("the first page, as the wake is asked: %s", r.answer.Body)
		}
		settle()
		r = do(context.Background(), p, browserRequest(), false)
		body := string(r.answer.Body)
		for _, want := range []string{
			"<title>Shop is starting</title>",
			`<span id="clevercloud-reaper-status">Starting</span><p>Route app app req-1 n1</p>`,
			`"events":"/.well-known/reaper/events"`,
			`<noscript><meta http-equiv="refresh" content="5"></noscript><script>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("page lacks %s:\n%s", want, body)
			}
		}
		if script, end := strings.Index(body, "<script>"), strings.LastIndex(body, "</body>"); script < 0 || script > end ||
			!strings.HasSuffix(body[:end], "</script>") {
			t.Errorf("reaper's script is not right before </body>:\n%s", body)
		}
		if r.status() != 503 || r.answer.Header.Get("Content-Type") != "text/html; charset=utf-8" || r.answer.Header.Get(HeaderStatus) != "WaitingForUp" {
			t.Errorf("answer %d %v", r.status(), r.answer.Header)
		}
	})
}

// Every value is escaped for where the page writes it: a hostile app name in a
// script, an attribute, a URL and text never ends its context.
func TestWaitingPage_CustomEscapesForTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hostile = `</script><script>alert(1)</script>" onmouseover="alert(2)`
		fake := paastest.New("app")
		fake.Set("app", paastest.App{State: paas.StateShouldBeDown, Name: hostile})
		fake.Manual = true
		e := newEnv(t, fake, "")
		p := e.route(config("app", func(c *Config) {
			c.WaitingPage = `<body><script>var app = {{app_name}};</script><a title="{{app_name}}" href="/apps?name={{app_name}}">{{app_name}}</a></body>`
		}))
		e.start()
		defer e.stop()
		settle()
		body := string(do(context.Background(), p, browserRequest(), false).answer.Body)
		if n := strings.Count(body, "<script"); n != 2 {
			t.Errorf("%d script elements, want 2 (the page's, reaper's):\n%s", n, body)
		}
		for _, bad := range []string{"<script>alert(1)", `" onmouseover="alert(2)`} {
			if strings.Contains(body, bad) {
				t.Errorf("page holds %s unescaped:\n%s", bad, body)
			}
		}
		for _, want := range []string{
			`var app = "\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e\" onmouseover=\"alert(2)";`,
			`title="&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#34; onmouseover=&#34;alert(2)"`,
			`href="/apps?name=%3c%2fscript%3e%3cscript%3ealert%281%29%3c%2fscript%3e%22%20onmouseover%3d%22alert%282%29"`,
			`>&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#34; onmouseover=&#34;alert(2)</a>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("page lacks %s:\n%s", want, body)
			}
		}
	})
}

// A custom page is checked when the configuration loads; one that still fails
// at a visitor's request gives way to the built-in page.
func TestWaitingPage_CustomCheckedAtLoadAndBuiltInAsFallback(t *testing.T) {
	for src, want := range map[string]string{
		"{{app}}":                  `cfg.waiting_page: unknown placeholder {{app}} (use {{app_id}}, {{app_name}}, {{node}}, {{request_id}}, {{route_name}}, {{status}})`,
		"{{.Nope}}":                `cfg.waiting_page: page:1:2: executing "page" at <.Nope>: can't evaluate field Nope in type page.Fields`,
		`<p title="{{app_name}}>`:  `cfg.waiting_page: html/template:page: ends in a non-text context`,
		`{{if .AppName}}<p>{{end}`: `cfg.waiting_page: page:1: bad character U+007D '}'`,
	} {
		var errs conf.Errors
		c := config("app", func(c *Config) { c.WaitingPage = src })
		c.Validate("cfg", &errs)
		if got := fmt.Sprint(errs.Err()); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %s\nwant %s", src, got, want)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		// Fine with the sample it is checked with; too large in Error.
		p := e.route(config("app", func(c *Config) {
			c.AllowPreview = true
			c.WaitingPage = `{{define "big"}}{{.Progress}}{{.Progress}}{{template "big" .}}{{end}}` +
				`<p>custom</p>{{if eq .Status "Error"}}{{template "big" .}}{{end}}`
		}))
		p.log = e.engine.log
		e.start()
		defer e.stop()
		settle()
		if body := string(do(context.Background(), p, previewRequest("?status=Down", ""), false).answer.Body); !strings.Contains(body, "<p>custom</p>") {
			t.Errorf("the custom page renders: %.300s", body)
		}
		body := string(do(context.Background(), p, previewRequest("?status=Error", ""), false).answer.Body)
		if strings.Contains(body, "<p>custom</p>") || !strings.Contains(body, `data-state="error"`) {
			t.Errorf("a page that fails to render gives way to the built-in one: %.300s", body)
		}
		if !strings.Contains(e.logs.String(), "the route's waiting page failed to render") {
			t.Errorf("nothing logged:\n%s", e.logs.String())
		}
	})
}

func previewRequest(query, authorization string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, WellKnownPreviewPath+query, nil)
	r.Header.Set("Accept", "text/html")
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return r
}

// The preview shows the page in any status and language, for the admin token
// or on a route that allows it; it wakes nothing and is no traffic.
func TestPreview_ShowsThePageWakingNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app", "open")
		e := newEnv(t, fake, "")
		e.engine.opts.AdminToken = "s3cret"
		p := e.route(config("app"))
		open := e.route(config("open", func(c *Config) {
			c.AllowPreview = true
			c.WaitingPage = `<body><h1>{{app_name}}</h1><p>{{status}}</p></body>`
		}))
		e.start()
		defer e.stop()
		settle()
		for _, auth := range []string{"", "Bearer wrong", "s3cret", "Bearer s3cret2"} {
			r := do(context.Background(), p, previewRequest("", auth), false)
			if r.status() != 401 || r.answer.Header.Get("WWW-Authenticate") == "" || strings.Contains(string(r.answer.Body), "s3cret") {
				t.Errorf("Authorization %q: %d %v %s", auth, r.status(), r.answer.Header, r.answer.Body)
			}
		}
		r := do(context.Background(), p, previewRequest("?status=Error&lang=ar", "Bearer s3cret"), false)
		body := string(r.answer.Body)
		if r.status() != 200 || r.answer.Header.Get("Cache-Control") != "no-store" || r.answer.Header.Get("X-Robots-Tag") != "noindex" {
			t.Errorf("preview: %d %v", r.status(), r.answer.Header)
		}
		for _, want := range []string{`lang="ar" dir="rtl" data-state="error" data-status="Error"`, `"preview":true`} {
			if !strings.Contains(body, want) {
				t.Errorf("preview lacks %s", want)
			}
		}
		if strings.Contains(body, `http-equiv="refresh"`) {
			t.Error("a preview reloads itself")
		}
		r = do(context.Background(), open, previewRequest("?status=WaitingForShutdown", ""), false)
		if r.status() != 200 || !strings.Contains(string(r.answer.Body), "<h1>Route open</h1><p>Finishing going to sleep</p><script>") {
			t.Errorf("a route that allows the preview, with its own page: %d %s", r.status(), r.answer.Body)
		}
		for query, code := range map[string]int{"?status=Bogus": 400, "?status=Up": 200, "": 200} {
			if r := do(context.Background(), open, previewRequest(query, ""), false); r.status() != code {
				t.Errorf("%s: %d, want %d", query, r.status(), code)
			}
		}
		post := previewRequest("", "Bearer s3cret")
		post.Method = http.MethodPost
		if r := do(context.Background(), p, post, false); r.status() != 405 {
			t.Errorf("POST: %d", r.status())
		}
		settle()
		if n := len(fake.Calls("start")); n != 0 {
			t.Errorf("%d starts: the preview woke an app", n)
		}
		if !p.route.a.lastAccessTime().IsZero() || !open.route.a.lastAccessTime().IsZero() {
			t.Error("the preview counted as traffic")
		}
	})
}

// Without an admin token on the node, the preview is only for routes that
// allow it: an empty bearer never matches.
func TestPreview_NoAdminTokenNoPreview(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		if r := do(context.Background(), p, previewRequest("", "Bearer "), false); r.status() != 401 {
			t.Errorf("empty bearer on a node without a token: %d", r.status())
		}
	})
}

package page

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"golang.org/x/net/html"
)

func render(t *testing.T, w Waiting, acceptLanguage string) string {
	t.Helper()
	b, err := RenderWaiting(context.Background(), w, acceptLanguage)
	if err != nil {
		t.Fatalf("RenderWaiting: %v", err)
	}
	return string(b)
}

// element is a start tag of the rendered page and its attributes.
type element struct {
	tag   string
	attrs map[string]string
}

// parse returns the start tags of page in order (those in <noscript> included) and the text of its <style> and <script> elements.
func parse(t *testing.T, page string) (elems []element, styles, scripts []string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var current string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("parse page: %v", z.Err())
			}
			return elems, styles, scripts
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			e := element{tag: tok.Data, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Key] = a.Val
			}
			elems = append(elems, e)
			current = tok.Data
		case html.TextToken:
			switch current {
			case "style":
				styles = append(styles, string(z.Text()))
			case "script":
				scripts = append(scripts, string(z.Text()))
			case "noscript":
				// A tokenizer reads <noscript> as raw text, as a browser with scripting does: parse it
				// too, as a browser without scripting would.
				inner, _, _ := parse(t, string(z.Text()))
				elems = append(elems, inner...)
			}
		case html.EndTagToken:
			current = ""
		}
	}
}

func find(elems []element, tag string) (element, bool) {
	for _, e := range elems {
		if e.tag == tag {
			return e, true
		}
	}
	return element{}, false
}

func TestRenderWaiting_EscapesEverythingTheUserControls(t *testing.T) {
	const attack = `<script>alert("x")</script><img src=x onerror=alert(1)>&amp;"'`
	w := Waiting{
		AppName: "app" + attack, RouteName: "route" + attack, AppID: "id" + attack,
		Status: `Down"><script>alert(2)</script>`, RequestID: "req" + attack, Node: "node" + attack,
	}
	page := render(t, w, "en")
	for _, raw := range []string{"<script>alert", "<img", `"><script>`, "onerror=alert(1)>"} {
		if strings.Contains(page, raw) {
			t.Errorf("page holds %q unescaped", raw)
		}
	}
	escaped := html.EscapeString(attack)
	for _, want := range []string{"route" + escaped, "req" + escaped, "node" + escaped} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped %q", want)
		}
	}
	elems, _, scripts := parse(t, page)
	if n := len(scripts); n != 1 {
		t.Errorf("page has %d scripts, want exactly 1 (ours)", n)
	}
	for _, e := range elems {
		if e.tag == "img" {
			t.Errorf("an <img> element got through: %v", e.attrs)
		}
	}
	root, _ := find(elems, "html")
	if got := root.attrs["data-status"]; got != w.Status {
		t.Errorf("data-status = %q, want the status verbatim once unescaped", got)
	}
}

func TestRenderWaiting_ShowsNamesAndFooter(t *testing.T) {
	page := render(t, Waiting{AppName: "Shop", RouteName: "shop-route", AppID: "app_123", Status: "Down",
		RequestID: "req-42", Node: "node-7"}, "")
	for _, want := range []string{"<title>shop-route is waking up</title>", "<bdi>shop-route</bdi> is waking up",
		"Request ID <bdi>req-42</bdi>", "Node <bdi>node-7</bdi>", `<div class="sp"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "app_123") {
		t.Error("page shows the app id to the visitor")
	}
	if strings.Contains(page, "Shop") {
		t.Error("page shows the app's platform name: the heading names the route, as the reference's page does")
	}
	if page := render(t, Waiting{Status: "Down"}, ""); strings.Contains(page, "<footer") {
		t.Error("footer rendered with neither request id nor node")
	}
}

func TestWaiting_DisplayName(t *testing.T) {
	tests := []struct {
		w    Waiting
		want string
	}{
		{Waiting{AppName: "A", RouteName: "R"}, "R"},
		{Waiting{RouteName: "R", AppID: "id"}, "R"},
		{Waiting{AppName: "A", AppID: "id"}, "A"},
		{Waiting{AppID: "id"}, "fallback"},
	}
	for _, tt := range tests {
		if got := tt.w.DisplayName("fallback"); got != tt.want {
			t.Errorf("%+v.DisplayName = %q, want %q", tt.w, got, tt.want)
		}
	}
	if page := render(t, Waiting{Status: "Down"}, "fr"); !strings.Contains(page, "<title>L’application se réveille</title>") {
		t.Error("a page without names does not use the language's default name")
	}
}

func TestRenderWaiting_InitialState(t *testing.T) {
	tests := []struct {
		status, state, refresh string
	}{
		{"WaitingForShutdown", StateWaiting, "5"},
		{"Down", StateWaiting, "5"},
		{"WaitingForUp", StateWaiting, "5"},
		{"Error", StateError, "30"},
		{"Up", StateAlmost, "5"},
		{"", StateWaiting, "5"},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			elems, _, _ := parse(t, render(t, Waiting{AppName: "a", Status: tt.status}, ""))
			root, _ := find(elems, "html")
			if got := root.attrs["data-state"]; got != tt.state {
				t.Errorf("data-state = %q, want %q", got, tt.state)
			}
			if got := root.attrs["data-status"]; got != tt.status {
				t.Errorf("data-status = %q, want %q", got, tt.status)
			}
			var refresh string
			for _, e := range elems {
				if e.tag == "meta" && e.attrs["http-equiv"] == "refresh" {
					refresh = e.attrs["content"]
				}
			}
			wantTitle := "a is waking up"
			if tt.state == StateError {
				wantTitle = "a could not be started"
			}
			if page := render(t, Waiting{AppName: "a", Status: tt.status}, ""); !strings.Contains(page, "<title>"+wantTitle+"</title>") {
				t.Errorf("title is not %q", wantTitle)
			}
			if refresh != tt.refresh {
				t.Errorf("noscript refresh = %q, want %q", refresh, tt.refresh)
			}
		})
	}
}

func TestRenderWaiting_IntervalsAreNumbersInTheScript(t *testing.T) {
	tests := []struct {
		poll, errorPoll time.Duration
		want            string
	}{
		{0, 0, `"poll":5000,"errorPoll":30000,`},
		{1500 * time.Millisecond, 45 * time.Second, `"poll":1500,"errorPoll":45000,`},
		{time.Millisecond, -time.Second, `"poll":50,"errorPoll":30000,`},
		{48 * time.Hour, 2 * time.Hour, `"poll":3600000,"errorPoll":3600000,`},
	}
	for _, tt := range tests {
		_, _, scripts := parse(t, render(t, Waiting{PollInterval: tt.poll, ErrorPollInterval: tt.errorPoll}, ""))
		if len(scripts) != 1 || !strings.Contains(scripts[0], tt.want) {
			t.Errorf("intervals %v/%v: script lacks %q", tt.poll, tt.errorPoll, tt.want)
		}
	}
}

func TestRenderWaiting_NoExternalReferences(t *testing.T) {
	for _, l := range locales {
		page := render(t, Waiting{AppName: "a", Status: "Error", RequestID: "r", Node: "n", EventsURL: "/.well-known/reaper/events"}, l.Tag.String())
		if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
			t.Errorf("%s: page holds an absolute URL", l.Tag)
		}
		elems, styles, scripts := parse(t, page)
		for _, e := range elems {
			for _, name := range []string{"src", "href", "srcset", "action", "poster", "data", "background"} {
				v, ok := e.attrs[name]
				if !ok {
					continue
				}
				// "#" goes nowhere, and the data: icon keeps the browser from asking the sleeping app
				// for /favicon.ico.
				if v != "#" && !(e.tag == "link" && name == "href" && v == "data:,") {
					t.Errorf("%s: <%s %s=%q> references something", l.Tag, e.tag, name, v)
				}
			}
			if e.tag == "script" || e.tag == "iframe" || e.tag == "object" || e.tag == "embed" {
				if _, ok := e.attrs["src"]; ok {
					t.Errorf("%s: <%s> loads something", l.Tag, e.tag)
				}
			}
			if e.tag == "link" && e.attrs["rel"] != "icon" {
				t.Errorf("%s: <link rel=%q> on the page", l.Tag, e.attrs["rel"])
			}
		}
		for _, s := range styles {
			if strings.Contains(s, "url(") || strings.Contains(s, "@import") || strings.Contains(s, "@font-face") {
				t.Errorf("%s: the style loads something", l.Tag)
			}
		}
		for _, s := range scripts {
			// The only requests the script makes are the poll of the page's own URL and the live progress
			// stream, whose URL is the one given.
			if strings.Count(s, "fetch(") != 1 || !strings.Contains(s, "fetch(location.href,") ||
				strings.Count(s, "EventSource(") != 1 || !strings.Contains(s, "new EventSource(C.events)") ||
				!strings.Contains(s, `"events":"/.well-known/reaper/events"`) ||
				strings.Contains(s, "import(") || strings.Contains(s, "createElement") || strings.Contains(s, "XMLHttpRequest") {
				t.Errorf("%s: the script loads something else than its own URL and its events", l.Tag)
			}
		}
	}
}

// TestRenderWaiting_SizeWorstCase renders every language with 100-character names made of characters that
// escape to the longest entities, in the longest state, with every phase reached and a known boot time,
// and keeps the page under 16 KB.
func TestRenderWaiting_SizeWorstCase(t *testing.T) {
	const limit = 16 << 10
	long := strings.Repeat(`"`, 100) // &#34; is 5 bytes
	w := Waiting{AppName: long, RouteName: long, AppID: long, Status: "WaitingForShutdown",
		RequestID: long, Node: long, PollInterval: 123456789, ErrorPollInterval: 987654321, EventsURL: "/.well-known/reaper/events",
		Progress: Progress{Asked: true, Waited: 123456 * time.Hour, Accepted: 12345 * time.Hour, Up: 23456 * time.Hour,
			Ready: 34567 * time.Hour, ETA: 45678 * time.Hour, Samples: 10}}
	largest, largestTag := 0, ""
	for _, l := range locales {
		n := len(render(t, w, l.Tag.String()))
		if n > largest {
			largest, largestTag = n, l.Tag.String()
		}
		if n >= limit {
			t.Errorf("%s: page is %d bytes, want < %d", l.Tag, n, limit)
		}
	}
	t.Logf("largest page: %s, %d bytes", largestTag, largest)
}

func TestRenderWaiting_LangAndDir(t *testing.T) {
	for _, l := range locales {
		elems, _, _ := parse(t, render(t, Waiting{AppName: "a"}, l.Tag.String()))
		root, _ := find(elems, "html")
		if root.attrs["lang"] != l.Tag.String() || root.attrs["dir"] != l.Dir {
			t.Errorf("%s: <html lang=%q dir=%q>, want lang=%q dir=%q", l.Tag, root.attrs["lang"], root.attrs["dir"], l.Tag, l.Dir)
		}
		if title := fill(l.Messages.Title, PlaceholderApp, "a"); !strings.Contains(render(t, Waiting{AppName: "a"}, l.Tag.String()), html.EscapeString(title)) {
			t.Errorf("%s: page lacks its title %q", l.Tag, title)
		}
	}
}

func TestRenderWaiting_Nonce(t *testing.T) {
	ctx := templ.WithNonce(context.Background(), `n0nce"x`)
	b, err := RenderWaiting(ctx, Waiting{}, "")
	if err != nil {
		t.Fatal(err)
	}
	elems, _, _ := parse(t, string(b))
	for _, tag := range []string{"style", "script"} {
		e, ok := find(elems, tag)
		if !ok || e.attrs["nonce"] != `n0nce"x` {
			t.Errorf("<%s> nonce = %q, want the context's", tag, e.attrs["nonce"])
		}
	}
	if page := render(t, Waiting{}, ""); strings.Contains(page, "nonce") {
		t.Error("nonce attribute rendered without a nonce in the context")
	}
}

func TestWaitingPage_IsAReusableComponent(t *testing.T) {
	var buf bytes.Buffer
	if err := WaitingPage(Waiting{AppName: "x"}, LocaleFor("de")).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "<bdi>x</bdi> wacht auf") {
		t.Errorf("component in German lacks its heading: %.200s", buf.String())
	}
	buf.Reset()
	if err := Spinner().Render(context.Background(), &buf); err != nil || !strings.Contains(buf.String(), `class="sp"`) {
		t.Errorf("Spinner = %q, %v", buf.String(), err)
	}
}

func ExampleRenderWaiting() {
	page, err := RenderWaiting(context.Background(), Waiting{AppName: "shop", Status: "Down", RequestID: "r1", Node: "n1"},
		"fr-CH, fr;q=0.9, en;q=0.8")
	if err != nil {
		return
	}
	fmt.Println(bytes.Contains(page, []byte(`<html lang="fr" dir="ltr" data-state="waiting" data-status="Down" data-eta="usual">`)))
	// Output: true
}

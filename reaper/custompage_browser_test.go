package reaper

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// customPageCfg is the reaper config of a route whose waiting page is the file
// at path.
func customPageCfg(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return `{app_id: app, ready_delay: 0s, fail_timeout: 60s, waiting_page_file: ` + strconv.Quote(abs) + `}`
}

// named names the app on the fake platform.
func named(name string) func(*paastest.Fake) {
	return func(f *paastest.Fake) { f.Set("app", paastest.App{State: paas.StateShouldBeDown, Name: name}) }
}

// A page written as the reference's are: its placeholders filled in, its
// status hook kept up to date by reaper's script (its own script still runs),
// and it opens the app once it is up.
func TestCustomPage_TheReferencesPageReloadsIntoTheApp(t *testing.T) {
	b := chrometest.Start(t)
	rig := newPageRig(t, "", customPageCfg(t, "testdata/reference-waiting-page.html"), named("Shop"))
	for _, scheme := range []string{"light", "dark"} {
		p := openPage(t, b, pageOpts{scheme: scheme, width: 1000})
		if err := p.Navigate(rig.front.URL + "/"); err != nil {
			t.Fatal(err)
		}
		p.WaitFor(t, `document.documentElement.dataset.live === "events" &&
			document.getElementById("clevercloud-reaper-status").textContent === "Starting"`, browserWait)
		p.WaitFor(t, `+document.getElementById("counter").textContent >= 1`, browserWait)
		if got := evalText(t, p, `document.title + " | " + document.querySelector("h1").textContent`); got != "Shop is starting | Shop is starting" {
			t.Errorf("title and heading %q, want the app's name", got)
		}
		if got := evalText(t, p, `document.querySelector("p.muted:last-of-type").textContent`); got != "Route r1, app app." {
			t.Errorf("route and app %q", got)
		}
		screenshot(t, p, "custom-reference-"+scheme)
		if scheme == "dark" {
			rig.fake.FinishStart("app")
			p.WaitFor(t, `document.getElementById("app") !== null`, browserWait)
		}
	}
}

// In Error, the body gets the reference's error class and the hook says so.
func TestCustomPage_ErrorHook(t *testing.T) {
	b := chrometest.Start(t)
	rig := newPageRig(t, "", customPageCfg(t, "testdata/reference-waiting-page.html"), func(f *paastest.Fake) {
		f.FailNext("start", fmt.Errorf("the build failed: %w", paas.ErrStartFailed))
	})
	p := openPage(t, b, pageOpts{scheme: "dark", width: 1000})
	if err := p.Navigate(rig.front.URL + "/"); err != nil {
		t.Fatal(err)
	}
	p.WaitFor(t, `document.body.classList.contains("clevercloud-reaper-error") &&
		document.getElementById("clevercloud-reaper-status").textContent === "Error"`, browserWait)
	if got := evalText(t, p, `getComputedStyle(document.querySelector(".failed")).display`); got != "block" {
		t.Errorf("the page's error message is %q, want shown", got)
	}
	screenshot(t, p, "custom-reference-error-dark")
}

// Values the page cannot trust (here the app's name on its platform) stay what
// they are wherever the page writes them: in a script, an attribute, a URL,
// text. Nothing of them runs.
func TestCustomPage_HostileValuesStayValues(t *testing.T) {
	const hostile = `</script><script>window.pwned=1</script>"><img src=x onerror="window.pwned=2">`
	page := filepath.Join(t.TempDir(), "page.html")
	err := os.WriteFile(page, []byte(`<!doctype html><body>
<script>window.appName = {{app_name}}; window.quoted = "{{app_name}}";</script>
<h1 title="{{app_name}}">{{app_name}}</h1><a id="l" href="/apps?name={{app_name}}">x</a>
</body>`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b := chrometest.Start(t)
	rig := newPageRig(t, "", customPageCfg(t, page), named(hostile))
	p := openPage(t, b, pageOpts{})
	if err := p.Navigate(rig.front.URL + "/"); err != nil {
		t.Fatal(err)
	}
	p.WaitFor(t, `document.documentElement.dataset.live === "events"`, browserWait)
	got := evalText(t, p, `JSON.stringify([typeof window.pwned, window.appName, window.quoted, document.querySelector("h1").title,
		document.querySelector("h1").textContent, new URL(document.getElementById("l").href).searchParams.get("name"),
		document.querySelectorAll("img").length])`)
	var want strings.Builder
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false) // as JSON.stringify writes it
	enc.Encode([]any{"undefined", hostile, hostile, hostile, hostile, hostile, 0})
	if got != strings.TrimSpace(want.String()) {
		t.Errorf("in the browser:\n got %s\nwant %s", got, want.String())
	}
}

// The worked example of docs/waiting-page.md: a page of its own, in the
// visitor's language, with the built-in progress, kept up to date.
func TestCustomPage_TheDocsWorkedExample(t *testing.T) {
	b := chrometest.Start(t)
	rig := newPageRig(t, "  name: shop-frontend", customPageCfg(t, "testdata/worked-example.html"), named("Shop"))
	for i, o := range []pageOpts{{lang: "en", scheme: "light", width: 1000}, {lang: "ar", scheme: "dark", width: 1000}} {
		p := openPage(t, b, o)
		if err := p.Navigate(rig.front.URL + "/"); err != nil {
			t.Fatal(err)
		}
		p.WaitFor(t, `document.documentElement.dataset.live === "events" &&
			document.querySelector('[data-phase="accepted"]').hasAttribute("data-done")`, browserWait)
		want := map[string]string{"en": "ltr|shop-frontend is waking up", "ar": "rtl|جارٍ إيقاظ shop-frontend"}[o.lang]
		if got := evalText(t, p, `document.documentElement.dir + "|" + document.title`); got != want {
			t.Errorf("%s: direction and title %q, want %q", o.lang, got, want)
		}
		screenshot(t, p, "custom-worked-example-"+o.lang+"-"+o.scheme)
		if i == 1 {
			rig.fake.FinishStart("app")
			p.WaitFor(t, `document.getElementById("app") !== null`, browserWait)
		}
	}
}

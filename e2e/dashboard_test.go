package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// The dashboard in a real headless Chromium, against the real binary running
// the demo app: sign in, the apps listed, Wake moving an app through
// WaitingForUp to Up on screen without a reload, Sleep now putting it down, a
// hold showing its reason and expiry. Screenshots go to $REAPER_SCREENSHOTS,
// else to the test's artifact directory (kept with go test -artifacts); the
// log names the folder.

const dashToken = "e2e-dashboard-token-5d1f0c"

// dashboardConfig is reaperConfig with an admin token, and a price for the
// first app (a cent a second, so that a few seconds asleep show as money).
func dashboardConfig(apps ...app) string {
	c := strings.Replace(reaperConfig(apps...), "  data_dir:", "  admin_token: "+dashToken+"\n  data_dir:", 1)
	return strings.Replace(c, "      stop_timeout: 3s\n", "      stop_timeout: 3s\n      price_per_hour: 36\n", 1)
}

// waitFor is how long the browser may take to show a change: generous, the
// machine is shared.
const waitFor = 30 * time.Second

func TestDashboard_InChromium(t *testing.T) {
	b := chrometest.Start(t)
	hello := app{id: "hello", addr: freeport.Addr(t), flags: `"--boot-delay", "1500ms"`}
	api := app{id: "api", addr: freeport.Addr(t), flags: `"--boot-delay", "1500ms"`, plugin: `api_behavior: unavailable`}
	p := startReaper(t, t.TempDir(), dashboardConfig(hello, api))
	testwait.For(t, 15*time.Second, "both apps Down", func() bool {
		down := map[any]bool{}
		for _, l := range p.logs() {
			if l["msg"] == "app status changed" && l["to"] == "Down" {
				down[l["app"]] = true
			}
		}
		return down["hello"] && down["api"]
	})
	r := &dashRun{t: t, p: p, base: "http://" + p.admin, shots: screenshotDir(t), pg: b.NewPage(t)}
	viewport(t, r.pg, 1280, 800)
	media(t, r.pg, "light")
	t.Cleanup(func() {
		if t.Failed() { // what the page showed when it went wrong
			if png, err := r.pg.Screenshot(); err == nil {
				_ = os.WriteFile(filepath.Join(r.shots, "failed.png"), png, 0o644)
				t.Logf("screenshot of the failure: %s", filepath.Join(r.shots, "failed.png"))
			}
		}
	})
	r.signIn()
	r.wakeThenSleep()
	r.hold()
	r.dark(b)
	withoutScript(t, b, r.base, r.shots)
}

// dashRun is one browser going through the dashboard of a running reaper.
type dashRun struct {
	t           *testing.T
	p           *reaperProc
	pg          *chrometest.Page
	base, shots string
}

// signIn: a browser that is not signed in gets the form; once signed in, the
// demo apps are listed, asleep, and the live updates are on.
func (r *dashRun) signIn() {
	t, pg := r.t, r.pg
	navigate(t, pg, r.base+"/")
	if got := evalString(t, pg, `location.pathname`); got != "/login" {
		t.Fatalf("a browser that is not signed in is at %s, want /login", got)
	}
	shoot(t, pg, r.shots, "login-light")
	eval(t, pg, `document.getElementById("token").value = `+jsString(dashToken)+`;
		document.getElementById("name").value = "alice"; document.querySelector("form").requestSubmit()`)
	pg.WaitFor(t, `location.pathname === "/" && document.querySelectorAll("tr[data-app]").length === 2`, waitFor)
	var rows []string
	evalInto(t, pg, `Array.from(document.querySelectorAll("tr[data-app]"), r => r.dataset.app + ":" + r.querySelector(".bt").textContent)`, &rows)
	if strings.Join(rows, ",") != "api:Down,hello:Down" {
		t.Errorf("apps listed: %v, want api:Down,hello:Down", rows)
	}
	pg.WaitFor(t, `document.getElementById("live").dataset.state === "on"`, waitFor)
	shoot(t, pg, r.shots, "apps-light")
}

// wakeThenSleep: on the app's page, Wake moves the status on screen through
// WaitingForUp to Up without a reload, and Sleep now puts it down.
func (r *dashRun) wakeThenSleep() {
	t, pg := r.t, r.pg
	navigate(t, pg, r.base+"/apps/hello")
	watchBadge(t, pg)
	pg.WaitFor(t, `document.getElementById("live").dataset.state === "on"`, waitFor)
	if got := strings.TrimSpace(evalString(t, pg, `document.getElementById("busy-url-fact").innerText`)); got != "—" {
		t.Errorf("hello has no busy_url; its page says %q", got)
	}
	act(t, pg, r.shots, "wake", "Wake hello now?")
	pg.WaitFor(t, `window.__seen.includes("Up")`, waitFor)
	seen := badgeHistory(t, pg)
	if i, j := indexOf(seen, "WaitingForUp"), indexOf(seen, "Up"); i < 0 || j < i {
		t.Errorf("the status badge showed %v: want WaitingForUp, then Up", seen)
	}
	if !strings.Contains(evalString(t, pg, `document.getElementById("toast").innerText`), "Wake asked for hello") {
		t.Error("the outcome of Wake is not shown")
	}
	pg.WaitFor(t, `document.querySelector("#r-wakes svg rect") !== null`, waitFor)
	noReload(t, pg)
	shoot(t, pg, r.shots, "app-woken-light")

	act(t, pg, r.shots, "sleep", "Put hello to sleep now?")
	pg.WaitFor(t, `window.__seen[window.__seen.length - 1] === "Down"`, waitFor)
	if seen := badgeHistory(t, pg); indexOf(seen, "WaitingForShutdown") < indexOf(seen, "Up") {
		t.Errorf("the status badge showed %v: want Up, WaitingForShutdown, Down", seen)
	}
	noReload(t, pg)
	// Asleep, hello saves a cent a second.
	testwait.For(t, waitFor, "hello's sleep saved a cent", func() bool {
		var sv struct {
			Today struct{ Money float64 } `json:"today"`
		}
		return adminJSON(t, r.p, "/api/apps/hello/savings", &sv) && sv.Today.Money >= 0.01
	})
	// What the process driver measured, shown as the page updates itself: the
	// boot it timed (the app takes 1.5 s), the memory it read when it put the
	// app to sleep.
	pg.WaitFor(t, `/^[0-9]/.test(document.getElementById("boot-fact").textContent.trim()) &&
		document.getElementById("memory-fact").innerText.includes("iB")`, waitFor)
	boot, err := time.ParseDuration(evalString(t, pg, `document.getElementById("boot-fact").textContent.trim()`))
	if err != nil || boot < 1500*time.Millisecond || boot > waitFor {
		t.Errorf("boot time shown %s (%v), want the app's 1.5 s boot and a little", boot, err)
	}
	if mem := evalString(t, pg, `document.getElementById("memory-fact").innerText`); !regexp.MustCompile(`^[0-9.]+ (KiB|MiB)\s+measured .+ ago$`).MatchString(mem) {
		t.Errorf("memory shown %q, want a size and when it was measured", mem)
	}
}

// hold: a hold shows its reason and its expiry (and wakes the app), on the
// app's page and in the table; the table's page shows what the sleep saved.
func (r *dashRun) hold() {
	t, pg := r.t, r.pg
	eval(t, pg, `document.querySelector("form[data-action=hold] select").value = "1d";
		document.querySelector("form[data-action=hold] input[name=reason]").value = "demo on Friday"`)
	act(t, pg, r.shots, "hold", "Keep hello awake for 1 day?")
	pg.WaitFor(t, `document.getElementById("hold-fact") && document.getElementById("hold-fact").innerText.includes("demo on Friday")`, waitFor)
	holdText := evalString(t, pg, `document.getElementById("hold-fact").innerText`)
	until := evalString(t, pg, `document.querySelector("#hold-fact time").getAttribute("datetime")`)
	if at, err := time.Parse(time.RFC3339, until); err != nil || time.Until(at) < 23*time.Hour || time.Until(at) > 25*time.Hour {
		t.Errorf("the hold's expiry is %q (%v), want a day from now", until, err)
	}
	if !strings.Contains(holdText, "until") || !strings.Contains(holdText, "by alice (dashboard)") {
		t.Errorf("the hold reads %q: want its expiry and who set it", holdText)
	}
	pg.WaitFor(t, `window.__seen[window.__seen.length - 1] === "Up"`, waitFor)
	noReload(t, pg)
	shoot(t, pg, r.shots, "app-held-light")

	navigate(t, pg, r.base+"/")
	pg.WaitFor(t, `document.querySelector('tr[data-app="hello"]').innerText.includes("demo on Friday")`, waitFor)
	if got := evalString(t, pg, `document.querySelector("#r-savings .tile .tv").textContent`); !strings.HasPrefix(got, "€") || got == "€0.00" {
		t.Errorf("saved today: %q, want the cents hello's sleep saved", got)
	}
	checkPage(t, pg)
	shoot(t, pg, r.shots, "apps-held-light")
}

// dark takes the pages again in the dark colour scheme.
func (r *dashRun) dark(b *chrometest.Browser) {
	t, pg := r.t, r.pg
	media(t, pg, "dark")
	shoot(t, pg, r.shots, "apps-dark")
	navigate(t, pg, r.base+"/apps/hello")
	pg.WaitFor(t, `document.querySelector("#r-wakes svg rect") !== null`, waitFor)
	shoot(t, pg, r.shots, "app-dark")
	out := b.NewPage(t) // a browser context of its own: signed out
	viewport(t, out, 1280, 800)
	media(t, out, "dark")
	navigate(t, out, r.base+"/")
	shoot(t, out, r.shots, "login-dark")
}

// withoutScript signs in and wakes an app with JavaScript off: plain forms,
// a confirmation page, the outcome on the app's page.
func withoutScript(t *testing.T, b *chrometest.Browser, base, shots string) {
	t.Helper()
	pg := b.NewPage(t)
	viewport(t, pg, 1280, 800)
	if err := pg.Call("Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil); err != nil {
		t.Fatal(err)
	}
	// With scripts off, Eval still runs (DevTools' own evaluation), so clicks are made
	// through the DOM, and each one navigates: wait for the next page.
	submit := func(js, path string) {
		t.Helper()
		eval(t, pg, js)
		pg.WaitFor(t, `document.readyState === "complete" && location.pathname === `+jsString(path), waitFor)
	}
	navigate(t, pg, base+"/apps/api")
	eval(t, pg, `document.getElementById("token").value = `+jsString(dashToken))
	submit(`document.querySelector("form").submit()`, "/apps/api")
	if evalString(t, pg, `document.documentElement.className`) != "" {
		t.Fatal("the dashboard's script ran with scripts off")
	}
	if evalString(t, pg, `getComputedStyle(document.getElementById("live")).display`) != "none" {
		t.Error("the live updates indicator shows with scripts off")
	}
	submit(`document.querySelector("form[data-action=wake] button").click()`, "/apps/api/wake")
	if q := evalString(t, pg, `document.querySelector("h1").textContent`); q != "Wake api now?" {
		t.Errorf("the confirmation page asks %q", q)
	}
	shoot(t, pg, shots, "confirm-noscript-light")
	submit(`document.querySelector("main form button[type=submit]").click()`, "/apps/api")
	if msg := evalString(t, pg, `document.querySelector("#toast .flash.ok") ? document.querySelector("#toast .flash.ok").textContent : ""`); !strings.Contains(msg, "Wake asked for api") {
		t.Errorf("after the confirmation the app's page says %q", msg)
	}
	testwait.For(t, waitFor, "api Up after a reload", func() bool {
		navigate(t, pg, base+"/apps/api")
		return evalString(t, pg, `document.querySelector("#r-head .bt").textContent`) == "Up"
	})
}

// act submits the action's form, checks the dialog's question, and confirms.
func act(t *testing.T, pg *chrometest.Page, shots, action, question string) {
	t.Helper()
	eval(t, pg, `document.querySelector("form[data-action=`+action+`] button[type=submit]").click()`)
	pg.WaitFor(t, `document.getElementById("confirm").open`, waitFor)
	if got := evalString(t, pg, `document.getElementById("confirm-q").textContent`); got != question {
		t.Errorf("%s asks %q, want %q", action, got, question)
	}
	if action == "wake" {
		shoot(t, pg, shots, "confirm-light")
	}
	eval(t, pg, `document.getElementById("toast").replaceChildren(); document.getElementById("confirm-ok").click()`)
	pg.WaitFor(t, `!document.getElementById("confirm").open && document.querySelector("#toast .flash") !== null`, waitFor)
	if msg := evalString(t, pg, `document.querySelector("#toast .flash").className + ": " + document.querySelector("#toast .flash").textContent`); !strings.HasPrefix(msg, "flash ok") {
		t.Fatalf("%s: the dashboard says %q", action, msg)
	}
}

// watchBadge records every status the app page's badge shows, and marks the
// document so that a reload shows.
func watchBadge(t *testing.T, pg *chrometest.Page) {
	t.Helper()
	eval(t, pg, `window.__seen = []; window.__sameDocument = true;
		(function () {
			function look() {
				var b = document.querySelector("#r-head [data-badge] .bt");
				if (b && window.__seen[window.__seen.length - 1] !== b.textContent) window.__seen.push(b.textContent);
			}
			look();
			new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true});
		})()`)
}

func badgeHistory(t *testing.T, pg *chrometest.Page) []string {
	t.Helper()
	var seen []string
	evalInto(t, pg, `window.__seen`, &seen)
	return seen
}

func noReload(t *testing.T, pg *chrometest.Page) {
	t.Helper()
	if evalString(t, pg, `String(window.__sameDocument === true)`) != "true" {
		t.Fatal("the page was reloaded")
	}
}

// checkPage checks that the page loaded nothing from elsewhere and shows no token.
func checkPage(t *testing.T, pg *chrometest.Page) {
	t.Helper()
	var foreign []string
	evalInto(t, pg, `performance.getEntriesByType("resource").map(e => e.name).filter(n => !n.startsWith(location.origin + "/"))`, &foreign)
	if len(foreign) > 0 {
		t.Errorf("the page loaded %v from elsewhere", foreign)
	}
	if strings.Contains(evalString(t, pg, `document.documentElement.outerHTML`), dashToken) {
		t.Error("the admin token is in the page")
	}
	if got := evalString(t, pg, `document.cookie`); got != "" {
		t.Errorf("a script can read cookies %q: they must be HttpOnly", got)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("REAPER_SCREENSHOTS")
	if dir == "" {
		dir = t.ArtifactDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s (set REAPER_SCREENSHOTS, or run go test -artifacts, to keep them)", dir)
	return dir
}

// shoot saves a screenshot of the whole page as name.png.
func shoot(t *testing.T, pg *chrometest.Page, dir, name string) {
	t.Helper()
	viewport(t, pg, 1280, 800)
	var h float64
	evalInto(t, pg, `Math.ceil(document.documentElement.scrollHeight)`, &h)
	viewport(t, pg, 1280, int(max(800, h)))
	png, err := pg.Screenshot()
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	viewport(t, pg, 1280, 800)
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

func viewport(t *testing.T, pg *chrometest.Page, w, h int) {
	t.Helper()
	if err := pg.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
}

// media sets the page's colour scheme, with reduced motion so that screenshots
// never catch an animation half-way.
func media(t *testing.T, pg *chrometest.Page, scheme string) {
	t.Helper()
	if err := pg.Call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{
		{"name": "prefers-color-scheme", "value": scheme}, {"name": "prefers-reduced-motion", "value": "reduce"}}}, nil); err != nil {
		t.Fatal(err)
	}
}

// adminJSON reads an admin API path with the token into v; false when it answers no 200.
func adminJSON(t *testing.T, p *reaperProc, path string, v any) bool {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+p.admin+path, nil)
	req.Header.Set("Authorization", "Bearer "+dashToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	return resp.StatusCode == 200 && json.Unmarshal([]byte(body), v) == nil
}

func navigate(t *testing.T, pg *chrometest.Page, url string) {
	t.Helper()
	if err := pg.Navigate(url); err != nil {
		t.Fatal(err)
	}
}

func eval(t *testing.T, pg *chrometest.Page, js string) {
	t.Helper()
	if _, err := pg.Eval(js); err != nil {
		t.Fatalf("eval: %v", err)
	}
}

func evalInto(t *testing.T, pg *chrometest.Page, js string, v any) {
	t.Helper()
	if err := pg.EvalInto(js, v); err != nil {
		t.Fatalf("eval %s: %v", js, err)
	}
}

func evalString(t *testing.T, pg *chrometest.Page, js string) string {
	t.Helper()
	var s string
	evalInto(t, pg, js, &s)
	return s
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

package dashboard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

func TestIndex_ShowsAppsWarningsAndCluster(t *testing.T) {
	td := newTestDash(t)
	td.api.settings = reaper.Settings{DryRun: true, KillSwitch: true}
	stale := time.Now().Add(-time.Hour)
	td.api.apps[1].LastCheckAt = &stale
	cookies, _ := td.signIn(t, "")
	res := td.do("GET", "/", nil, cookies)
	page := res.Body.String()
	if res.Code != 200 {
		t.Fatalf("GET /: %d", res.Code)
	}
	for _, want := range []string{
		"Dry run is on", "The kill switch is on", "crm is in Error", "the deployment failed",
		"The platform may be unreachable", "No check of blog has succeeded for 1 h",
		"Savings are not available on this node", // the API has no /api/savings: 404
		"demo on Friday",                         // shop's hold
		"blog, blog-www",                         // routes
		"memory:",                                // the store in the node panel
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the apps page does not say %q", want)
		}
	}
	if strings.Contains(page, testToken) {
		t.Error("the admin token is in the page")
	}
	// Held requests per node: 2 here, 1 on n2.
	if !regexp.MustCompile(`<span class="muted">n1</span> 2</span><span class="pill"><span class="muted">n2</span> 1`).MatchString(page) {
		t.Error("shop's held requests are not shown per node (n1 2, n2 1)")
	}
	if got := rowOrder(page); strings.Join(got, ",") != "blog,crm,shop" {
		t.Errorf("rows %v, want sorted by app", got)
	}
	res = td.do("GET", "/?status=asleep", nil, cookies)
	if got := rowOrder(res.Body.String()); strings.Join(got, ",") != "blog" {
		t.Errorf("rows with status=asleep: %v, want blog", got)
	}
	res = td.do("GET", "/?sort=status&dir=desc&q=o", nil, cookies)
	if got := rowOrder(res.Body.String()); strings.Join(got, ",") != "shop,blog" {
		t.Errorf("rows with \"o\", sorted by status, descending: %v, want shop,blog (crm has no o)", got)
	}
}

func TestIndex_StoreUnreachable(t *testing.T) {
	td := newTestDash(t)
	cookies, _ := td.signIn(t, "")
	td.api.storeErr = "the store cannot be read: valkey at 10.0.0.5:6379 unreachable"
	res := td.do("GET", "/", nil, cookies)
	page := res.Body.String()
	if res.Code != 200 {
		t.Fatalf("GET / with the store down: %d, want the page with what it can show", res.Code)
	}
	for _, want := range []string{"The store is unreachable", "valkey at 10.0.0.5:6379 unreachable", "The apps cannot be read", "The settings cannot be read"} {
		if !strings.Contains(page, want) {
			t.Errorf("with the store down, the page does not say %q", want)
		}
	}
}

func rowOrder(page string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<tr data-app="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestIndex_SavingsTiles(t *testing.T) {
	td := newTestDash(t)
	period := func(money float64) map[string]any {
		return map[string]any{"asleep_seconds": 7200, "money": money, "gib_hours": 1}
	}
	td.api.savings = map[string]any{"apps": []any{}, "total": map[string]any{"currency": "EUR",
		"today": period(1.25), "month": period(30.5), "all_time": period(412), "saving_now_per_hour": 0.07}}
	cookies, _ := td.signIn(t, "")
	page := td.do("GET", "/", nil, cookies).Body.String()
	for _, want := range []string{"€1.25", "€30.50", "€412.00", "€0.07 / h", "2 h asleep"} {
		if !strings.Contains(page, want) {
			t.Errorf("the savings tiles do not show %q", want)
		}
	}
	if strings.Contains(page, "not available") {
		t.Error("savings said not available while the API gave them")
	}
}

func TestAppPage_ShowsStateWakesAwakeAndHistory(t *testing.T) {
	td := newTestDash(t)
	cookies, _ := td.signIn(t, "")
	res := td.do("GET", "/apps/shop", nil, cookies)
	page := res.Body.String()
	if res.Code != 200 {
		t.Fatalf("GET /apps/shop: %d", res.Code)
	}
	for _, want := range []string{
		`data-app="shop"`, "Up", "demo on Friday", "by bob", // the hold, reason and who
		"Held awake until", "Down → WaitingForUp", // the history
		"page 1 of 3", "/apps/shop?page=2", // 60 entries, 25 a page
		"/checkout", "3 requests", // why awake
		"Busy: its sleep is put off since", "its busy_url answered 200", // a worker's busy_url
		"Savings are not available",                              // 404 for the app's savings
		"from the label reaper.grace_period of container shop-1", // the app's own grace period
		"Busy URL", "http://shop-1:8080/busy", "from the label reaper.busy_url of container shop-1", // its busy_url, and from where
		"Boot time", "1.234s", "Memory awake", "39.1 MiB", "measured", // what the driver measured
		"Depends on", "db, cache", // the apps it needs up first
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the app page does not say %q", want)
		}
	}
	// The chart: one wake of three phases.
	if n := len(regexp.MustCompile(`<rect class="ph[123]"`).FindAllString(page, -1)); n != 3 {
		t.Errorf("the wakes chart has %d phase bars, want 3", n)
	}
	if !strings.Contains(page, "start accepted: 0.10 s") || !strings.Contains(page, "2.3 s") {
		t.Error("the chart does not give the phases' and the wake's durations")
	}
	crm := td.do("GET", "/apps/crm", nil, cookies).Body.String()
	if !strings.Contains(crm, `label reaper.grace_period: &#34;soon&#34; is not a duration (the routes&#39; grace period applies)`) {
		t.Error("the app page does not show the label that cannot be read")
	}
	if !strings.Contains(crm, "crm → mail → crm): ignored") || !strings.Contains(crm, `<span id="depends-fact">—`) {
		t.Error("the app page does not show the depends_on it ignores, and why")
	}
	if blog := td.do("GET", "/apps/blog", nil, cookies).Body.String(); strings.Contains(blog, "Depends on") {
		t.Error("an app with no depends_on has a Depends on fact")
	}
	if !strings.Contains(crm, `<span id="memory-fact">—</span>`) {
		t.Error("an app whose memory was never measured does not show a dash")
	}
	if !regexp.MustCompile(`<span id="busy-url-fact"[^>]*>— </span>`).MatchString(crm) {
		t.Error("an app without a busy_url does not show a dash for it")
	}
	if res := td.do("GET", "/apps/nope", nil, cookies); res.Code != 404 || !strings.Contains(res.Body.String(), `There is no app &#34;nope&#34;`) {
		t.Errorf("an unknown app: %d", res.Code)
	}
}

func TestActions_ConfirmThenCallTheAPI(t *testing.T) {
	td := newTestDash(t)
	cookies, csrf := td.signIn(t, "alice")
	// Without the script: the first post asks.
	res := td.do("POST", "/apps/shop/hold", url.Values{csrfField: {csrf}, "duration": {"6h"}, "reason": {"demo on Friday"}}, cookies)
	page := res.Body.String()
	if res.Code != 200 || !strings.Contains(page, "Keep shop awake for 6h?") || fieldValue(t, page, "confirm") != "yes" ||
		fieldValue(t, page, "duration") != "6h" || fieldValue(t, page, csrfField) != csrf {
		t.Fatalf("the confirmation page: %d\n%s", res.Code, page)
	}
	if w := td.api.writes(); len(w) != 0 {
		t.Fatalf("the API was called before the confirmation: %+v", w)
	}
	// Its button posts the form again, confirmed.
	res = td.do("POST", "/apps/shop/hold", url.Values{csrfField: {csrf}, "duration": {"6h"}, "reason": {"demo on Friday"}, "confirm": {"yes"}}, cookies)
	if res.Code != http.StatusSeeOther || res.Header().Get("Location") != "/apps/shop" {
		t.Fatalf("confirmed: %d to %q", res.Code, res.Header().Get("Location"))
	}
	w := td.api.writes()
	if len(w) != 1 || w[0].method != "POST" || w[0].path != "/api/apps/shop/_hold" ||
		w[0].body["duration"] != "6h" || w[0].body["reason"] != "demo on Friday" || w[0].body["by"] != "alice (dashboard)" {
		t.Fatalf("API calls %+v", w)
	}
	// The next page shows the outcome, once.
	flashCookies := append(cookies, cookieNamed(res.Result().Cookies(), flashCookie))
	next := td.do("GET", "/apps/shop", nil, flashCookies)
	if !strings.Contains(next.Body.String(), "shop is held awake until") {
		t.Error("the outcome is not shown after the redirect")
	}
	if c := cookieNamed(next.Result().Cookies(), flashCookie); c == nil || c.MaxAge >= 0 {
		t.Error("the outcome is not removed once shown")
	}

	for action, want := range map[string]string{
		"wake": "POST /api/apps/shop/_wake", "release": "DELETE /api/apps/shop/_hold",
		"reset": "POST /api/apps/shop/_reset", "sleep": "POST /api/apps/shop/_sleep?force=true",
	} {
		res := td.do("POST", "/apps/shop/"+action, url.Values{csrfField: {csrf}, "confirm": {"yes"}, "force": {"true"}}, cookies, "Accept", "application/json")
		w := td.api.writes()
		if last := w[len(w)-1]; res.Code != 200 || last.method+" "+last.path != want {
			t.Errorf("%s: %d, last call %s %s, want %s", action, res.Code, last.method, last.path, want)
		}
	}
}

func TestActions_ARefusalIsShown(t *testing.T) {
	td := newTestDash(t)
	td.api.refuse["_sleep"] = "dry run is on: no app is put to sleep"
	cookies, csrf := td.signIn(t, "")
	res := td.do("POST", "/apps/shop/sleep", url.Values{csrfField: {csrf}, "confirm": {"yes"}}, cookies, "Accept", "application/json")
	if res.Code != http.StatusConflict || !strings.Contains(res.Body.String(), "dry run is on") {
		t.Errorf("the script's post: %d %s, want 409 and the reason", res.Code, res.Body)
	}
	res = td.do("POST", "/apps/shop/sleep", url.Values{csrfField: {csrf}, "confirm": {"yes"}}, cookies)
	next := td.do("GET", "/apps/shop", nil, append(cookies, cookieNamed(res.Result().Cookies(), flashCookie)))
	if !strings.Contains(next.Body.String(), `<p class="flash error">dry run is on: no app is put to sleep</p>`) {
		t.Error("without the script, the refusal is not shown on the app's page")
	}
	if res := td.do("POST", "/apps/shop/explode", url.Values{csrfField: {csrf}, "confirm": {"yes"}}, cookies); res.Code != 404 {
		t.Errorf("an unknown action: %d, want 404", res.Code)
	}
}

func TestSettings_ChangeOneKeepTheOther(t *testing.T) {
	td := newTestDash(t)
	td.api.settings = reaper.Settings{KillSwitch: true}
	cookies, csrf := td.signIn(t, "")
	res := td.do("POST", "/settings", url.Values{csrfField: {csrf}, "setting": {"dry_run"}, "value": {"on"}}, cookies)
	if !strings.Contains(res.Body.String(), "Turn dry run on?") {
		t.Fatalf("no confirmation before a setting changes: %d", res.Code)
	}
	td.do("POST", "/settings", url.Values{csrfField: {csrf}, "setting": {"dry_run"}, "value": {"on"}, "confirm": {"yes"}}, cookies)
	if s := td.api.settings; !s.DryRun || !s.KillSwitch {
		t.Errorf("settings after turning dry run on: %+v, want both on", s)
	}
}

func TestHeldHandler_GivesThisNodesHeldRequests(t *testing.T) {
	f := &fakeAPI{apps: testApps()}
	rec := httptest.NewRecorder()
	HeldHandler("n1", f.handler()).ServeHTTP(rec, mustRequest(t, "GET", "/held"))
	if got := rec.Body.String(); rec.Code != 200 || !strings.Contains(got, `"node": "n1"`) || !strings.Contains(got, `"shop": 2`) || strings.Contains(got, "blog") {
		t.Errorf("held: %d %s", rec.Code, got)
	}
}

func mustRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

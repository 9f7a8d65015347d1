package e2e

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// scrape reads the node's /metrics (with the admin token) into series → value,
// keyed as the exposition prints them: name{label="v",…} with the labels sorted.
func scrape(t *testing.T, p *reaperProc) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+p.admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %v %v", resp, err)
	}
	defer resp.Body.Close()
	return parseExposition(t, resp.Body)
}

// parseExposition reads the Prometheus text format into series → value.
func parseExposition(t *testing.T, r io.Reader) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// series counts the series of a metric.
func series(m map[string]float64, name string) int {
	n := 0
	for k := range m {
		if strings.HasPrefix(k, name+"{") {
			n++
		}
	}
	return n
}

// Every metric moves as documented: a held request's wake, its phases, the
// platform's calls, the app's status; many distinct paths and clients add no
// series; without the token, no metrics.
func TestReaper_MetricsMoveAsDocumented(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "200ms"`}
	cfg := strings.Replace(reaperConfig(a), "  shutdown_timeout: 5s\n", "  shutdown_timeout: 5s\n  admin_token: "+e2eAdminToken+"\n", 1)
	p := startReaper(t, t.TempDir(), cfg)
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "app status changed" && l["to"] == "Down" }, 10*time.Second)

	if resp, err := http.Get("http://" + p.admin + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("/metrics without the token: %v %v; want 401", resp, err)
	}
	before := scrape(t, p)
	if before[`reaper_app_status{app="web",status="Down"}`] != 1 || before[`reaper_held_requests{app="web"}`] != 0 {
		t.Fatalf("before: app status and held requests not as the app is: %v", before[`reaper_app_status{app="web",status="Down"}`])
	}
	if code, _, _ := getApp(t, p, "web.test"); code != 200 {
		t.Fatalf("held request: %d", code)
	}
	var after map[string]float64
	testwait.For(t, 5*time.Second, "the wake's first answer counted", func() bool {
		after = scrape(t, p)
		return after[`reaper_wake_duration_seconds_count{app="web",phase="first_answer"}`] == 1
	})
	for key, want := range map[string]float64{
		`reaper_requests_total{answer="held_then_proxied",class="api",route="web"}`: 1,
		`reaper_wakes_total{app="web",cause="request"}`:                             1,
		`reaper_paas_calls_total{call="start",driver="process",outcome="ok"}`:       1,
		`reaper_held_wait_seconds_count{app="web"}`:                                 1,
		`reaper_wake_duration_seconds_count{app="web",phase="platform_up"}`:         1,
		`reaper_wake_duration_seconds_count{app="web",phase="total"}`:               1,
		`reaper_app_status{app="web",status="Up"}`:                                  1,
		`reaper_wake_asks_pending{app="web"}`:                                       0,
	} {
		if got := after[key]; got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if s := after[`reaper_wake_duration_seconds_sum{app="web",phase="total"}`]; s < 0.2 || s > 10 {
		t.Errorf("the wake took %v s in all; want at least the app's 200 ms boot", s)
	}
	if series(after, "reaper_app_status") != 1 {
		t.Errorf("reaper_app_status has %d series, want one per app", series(after, "reaper_app_status"))
	}

	// 300 requests with distinct paths, clients and agents: counted, no new series.
	n := series(after, "reaper_requests_total")
	for i := range 300 {
		resp, err := p.request("GET", "web.test", "/x/"+strconv.Itoa(i), nil, "Accept", "application/json",
			"User-Agent", "agent-"+strconv.Itoa(i), "X-Forwarded-For", "10.1.2."+strconv.Itoa(i%250))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	final := scrape(t, p)
	if got := series(final, "reaper_requests_total"); got != n { // the proxied answers' series existed from the start
		t.Errorf("after 300 distinct requests, reaper_requests_total has %d series, want %d", got, n)
	}
	if got := final[`reaper_requests_total{answer="proxied",class="api",route="web"}`]; got != 300 {
		t.Errorf("proxied requests counted %v, want 300", got)
	}
}

// adminPost calls an action on the node's admin API.
func adminPost(t *testing.T, p *reaperProc, method, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+p.admin+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Held requests show as held and parked while the app boots; a hold shows its
// expiry; an operator's sleep counts as one, with its stop call; the time asleep
// is counted as saved.
func TestReaper_MetricsOfHoldsAndSleeps(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1500ms"`}
	cfg := strings.Replace(reaperConfig(a), "  shutdown_timeout: 5s\n", "  shutdown_timeout: 5s\n  admin_token: "+e2eAdminToken+"\n", 1)
	p := startReaper(t, t.TempDir(), cfg)
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "app status changed" && l["to"] == "Down" }, 10*time.Second)

	done := make(chan int, 3)
	for range 3 {
		go func() {
			code, _, _ := getApp(t, p, "web.test")
			done <- code
		}()
	}
	testwait.For(t, 5*time.Second, "three held requests in the metrics", func() bool {
		m := scrape(t, p)
		return m[`reaper_held_requests{app="web"}`] == 3 && m["reaper_parked_requests"] == 3
	})
	for range 3 {
		if code := <-done; code != 200 {
			t.Fatalf("held request: %d", code)
		}
	}
	if code := adminPost(t, p, "POST", "/api/apps/web/_hold", `{"duration": "2h"}`); code != 200 {
		t.Fatalf("hold: %d", code)
	}
	m := scrape(t, p)
	if exp := m[`reaper_app_hold_expiry_timestamp_seconds{app="web"}`]; exp < float64(time.Now().Add(119*time.Minute).Unix()) {
		t.Fatalf("hold expiry %v; want about two hours from now", exp)
	}
	if code := adminPost(t, p, "POST", "/api/apps/web/_sleep?force=true", ""); code != 202 {
		t.Fatalf("sleep: %d", code)
	}
	testwait.For(t, 10*time.Second, "the sleep counted and some time saved", func() bool {
		m = scrape(t, p)
		return m[`reaper_sleeps_total{app="web",cause="operator"}`] == 1 && m[`reaper_saved_seconds_total{app="web"}`] > 0
	})
	if m[`reaper_paas_calls_total{call="stop",driver="process",outcome="ok"}`] != 1 || m[`reaper_app_status{app="web",status="Down"}`] != 1 {
		t.Errorf("after the sleep: stop calls %v, Down %v; want 1 and 1",
			m[`reaper_paas_calls_total{call="stop",driver="process",outcome="ok"}`], m[`reaper_app_status{app="web",status="Down"}`])
	}
	if _, ok := m[`reaper_app_hold_expiry_timestamp_seconds{app="web"}`]; ok {
		t.Errorf("a forced sleep ended the hold, yet its expiry is still exported")
	}
	if _, ok := m[`reaper_savings_total{app="web",currency="none"}`]; !ok || series(m, "reaper_savings_total") != 1 {
		t.Errorf("reaper_savings_total of an app with no price_per_hour: %d series, want one, currency=\"none\"", series(m, "reaper_savings_total"))
	}
}

// A freshly started node's first scrape has the series of every configured app,
// route, webhook and fixed label value, at 0, so that dashboards and alerts see
// an app before its first wake; an app without a price has currency="none" and
// one with a price its currency.
func TestReaper_MetricsExistFromTheFirstScrape(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer hook.Close()
	free, priced := app{id: "web", addr: freeport.Addr(t)}, app{id: "paid", addr: freeport.Addr(t)}
	cfg := strings.Replace(reaperConfig(free, priced), "  shutdown_timeout: 5s\n", "  shutdown_timeout: 5s\n  admin_token: "+e2eAdminToken+"\n", 1)
	cfg = strings.Replace(cfg, "    - id: paid\n", "    - id: paid\n      price_per_hour: 0.5\n      currency: USD\n", 1)
	cfg += "events:\n  webhooks:\n    - {name: ops, url: \"" + hook.URL + "\"}\n"
	p := startReaper(t, t.TempDir(), cfg)

	m := scrape(t, p)
	want := []string{
		`reaper_savings_total{app="web",currency="none"}`,
		`reaper_savings_total{app="paid",currency="USD"}`,
		`reaper_saved_seconds_total{app="web"}`,
		`reaper_held_requests{app="web"}`,
		`reaper_held_wait_seconds_count{app="web"}`,
		`reaper_wake_asks_pending{app="web"}`,
		`reaper_requests_total{answer="timeout",class="api",route="web"}`,
		`reaper_requests_total{answer="waiting_page",class="browser",route="web"}`,
		`reaper_requests_total{answer="monitoring",class="monitor",route="paid"}`,
		`reaper_request_duration_seconds_count{class="api",route="web"}`,
		`reaper_paas_calls_total{call="start",driver="process",outcome="rate_limited"}`,
		`reaper_paas_call_duration_seconds_count{call="stop",driver="process"}`,
		`reaper_webhook_deliveries_total{outcome="dropped",webhook="ops"}`,
	}
	for _, id := range []string{"web", "paid"} {
		for _, cause := range []string{"request", "keep_up", "hold", "prewake", "other"} {
			want = append(want, `reaper_wakes_total{app="`+id+`",cause="`+cause+`"}`)
		}
		for _, cause := range []string{"idle", "operator"} {
			want = append(want, `reaper_sleeps_total{app="`+id+`",cause="`+cause+`"}`)
		}
		for _, phase := range []string{"start_accepted", "platform_up", "first_answer", "total"} {
			want = append(want, `reaper_wake_duration_seconds_count{app="`+id+`",phase="`+phase+`"}`)
		}
	}
	for _, key := range want {
		if v, ok := m[key]; !ok || v != 0 {
			t.Errorf("first scrape: %s = %v (present %v), want 0", key, v, ok)
		}
	}
	if n := series(m, "reaper_savings_total"); n != 2 {
		t.Errorf("reaper_savings_total has %d series, want one per app", n)
	}
}

package reaper

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

func call(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any, []any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var obj map[string]any
	var list []any
	if strings.HasPrefix(strings.TrimSpace(rec.Body.String()), "[") {
		json.Unmarshal(rec.Body.Bytes(), &list)
	} else {
		json.Unmarshal(rec.Body.Bytes(), &obj)
	}
	return rec.Code, obj, list
}

func TestAdminAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.FailNext("start", paas.ErrNeverDeployed)
		e := newEnv(t, fake, "")
		e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()

		code, _, list := call(t, h, "GET", "/api/apps", "")
		if code != 200 || len(list) != 1 || list[0].(map[string]any)["status"] != "Down" || list[0].(map[string]any)["grace_period"] != "15m0s" {
			t.Fatalf("list: %d %v", code, list)
		}
		// An operator's wake of a never-deployed app: Error.
		if code, _, _ := call(t, h, "POST", "/api/apps/app/_wake", ""); code != 202 {
			t.Fatalf("wake: %d", code)
		}
		settle()
		code, app, _ := call(t, h, "GET", "/api/apps/app", "")
		if code != 200 || app["status"] != "Error" || !strings.Contains(app["error_cause"].(string), "never deployed") {
			t.Fatalf("app: %d %v", code, app)
		}
		code, hist, _ := call(t, h, "GET", "/api/apps/app/history?page_size=10", "")
		items := hist["items"].([]any)
		if code != 200 || hist["total"] != float64(4) || items[0].(map[string]any)["to"] != "Error" {
			t.Fatalf("history: %d %v", code, hist)
		}
		if ask := items[2].(map[string]any); ask["kind"] != EventWakeAsk || ask["by"] != "admin API" {
			t.Fatalf("history: the operator's wake ask is %v, want kind %s by the admin API", ask, EventWakeAsk)
		}
		// Reset: back to WaitingForInit, then the job places it (Down).
		if code, body, _ := call(t, h, "POST", "/api/apps/app/_reset", ""); code != 200 || body["status"] != "WaitingForInit" {
			t.Fatalf("reset: %d %v", code, body)
		}
		settle()
		if st, _ := e.engine.Record("app"); st.Status != StatusDown {
			t.Errorf("after reset: %s", st.Status)
		}
		if code, _, _ := call(t, h, "GET", "/api/apps/nope", ""); code != 404 {
			t.Errorf("unknown app: %d", code)
		}
		if code, _, _ := call(t, h, "GET", "/api/apps/app/history?page=0", ""); code != 400 {
			t.Errorf("bad page: %d", code)
		}
		// Settings.
		if code, s, _ := call(t, h, "PUT", "/api/settings", `{"dry_run": true}`); code != 200 || s["dry_run"] != true {
			t.Fatalf("put settings: %d %v", code, s)
		}
		if s, _ := e.store.Settings(context.Background()); !s.DryRun {
			t.Errorf("dry run not stored")
		}
		if code, s, _ := call(t, h, "PUT", "/api/settings", `{"dry_rn": true}`); code != 400 || !strings.Contains(s["error"].(string), "dry_rn") {
			t.Errorf("bad settings: %d %v", code, s)
		}
	})
}

func TestAdminAPI_ShowsWhatTheDriverMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app", "other")
		at := time.Now()
		fake.SetMeasures("app", paas.Measures{BootTime: 1234567 * time.Microsecond, MemoryBytes: 42 << 20, MemoryAt: at})
		e := newEnv(t, fake, "")
		e.route(config("app"))
		e.route(config("other"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store, Meter: fake}).Handler()
		_, v, _ := call(t, h, "GET", "/api/apps/app", "")
		if v["boot_time"] != "1.235s" || v["memory_bytes"] != float64(42<<20) || v["memory_at"] != at.UTC().Format(time.RFC3339Nano) {
			t.Errorf("app: boot %v, memory %v at %v; want 1.235s, 42 MiB at %s", v["boot_time"], v["memory_bytes"], v["memory_at"], at)
		}
		_, _, list := call(t, h, "GET", "/api/apps", "")
		for _, x := range list {
			o := x.(map[string]any)
			_, boot := o["boot_time"]
			_, mem := o["memory_bytes"]
			if (o["app_id"] == "app") != (boot && mem) {
				t.Errorf("list: %v has boot_time %v, memory_bytes %v", o["app_id"], boot, mem)
			}
		}
	})
}

// An app's view says which busy_url is in effect and where it comes from: a
// route's (which wins over the app's own), the driver's hint for the app (its
// label or config entry), or none. The URL's query, which may hold a token, is
// never shown.
func TestAdminAPI_BusyURLAndWhereItComesFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const label = "label reaper.busy_url of container worker-1"
		fake := paastest.New("routed", "both", "labelled", "declared", "none")
		fake.SetHint("both", paas.PolicyHint{BusyURL: "http://127.0.0.1:4001/busy", BusyFrom: label}, nil)
		fake.SetHint("labelled", paas.PolicyHint{BusyURL: "http://127.0.0.1:4002/busy", BusyMax: 5 * time.Minute, BusyFrom: label}, nil)
		fake.SetHint("declared", paas.PolicyHint{BusyURL: "http://127.0.0.1:4003/busy"}, nil)
		e := newEnv(t, fake, "")
		e.engine.opts.Policies = fake
		e.route(config("routed", func(c *Config) { c.BusyURL = "http://127.0.0.1:3001/busy?token=s3cret" }))
		e.route(config("both", func(c *Config) { c.BusyURL = "http://127.0.0.1:3002/busy" }))
		e.route(config("labelled"))
		e.route(config("declared"))
		e.route(config("none"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		for _, tc := range []struct {
			app, url, from, busyMax string
		}{
			{"routed", "http://127.0.0.1:3001/busy", "route route-routed", "1h0m0s"},
			{"both", "http://127.0.0.1:3002/busy", "route route-both", "1h0m0s"},
			{"labelled", "http://127.0.0.1:4002/busy", label, "5m0s"},
			{"declared", "http://127.0.0.1:4003/busy", "driver hint", "1h0m0s"},
			{"none", "", "", ""},
		} {
			code, v, _ := call(t, h, "GET", "/api/apps/"+tc.app, "")
			got := func(k string) string { s, _ := v[k].(string); return s }
			if code != 200 || got("busy_url") != tc.url || got("busy_url_from") != tc.from || got("busy_max") != tc.busyMax {
				t.Errorf("%s: %d busy_url %q from %q, busy_max %q; want %q from %q, %q", tc.app, code,
					got("busy_url"), got("busy_url_from"), got("busy_max"), tc.url, tc.from, tc.busyMax)
			}
			if _, ok := v["busy_url_from"]; tc.from == "" && ok {
				t.Errorf("%s: busy_url_from present without a busy_url", tc.app)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/apps", nil))
		if list := rec.Body.String(); rec.Code != 200 || !strings.Contains(list, `"http://127.0.0.1:3001/busy"`) || strings.Contains(list, "s3cret") {
			t.Errorf("the list (%d) shows no busy_url, or the busy_url's query (a token): %s", rec.Code, list)
		}
	})
}

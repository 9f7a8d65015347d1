package reaper

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The answers that were maps are structs now: each must encode to the very
// bytes the map did (same names, same order, same nulls), or a script reading
// the API would see the change.
func TestAdminWire_AnswersEncodeAsTheMapsDid(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	hold := &KeepWarm{Until: at.Add(time.Hour), Reason: "backup", By: "ops", Since: at}
	ask := &SleepAsk{At: at, By: "ops", Force: true}
	items := []Transition{{AppID: "a", From: StatusUp, To: StatusDown, At: at, Cause: "idle"}}
	for _, c := range []struct {
		name       string
		typed, was any
	}{
		{"history", HistoryPage{Items: items, Total: 7, Page: 2, PageSize: 1},
			map[string]any{"items": items, "total": 7, "page": 2, "page_size": 1}},
		{"history empty", HistoryPage{Items: []Transition{}, Page: 1, PageSize: 50},
			map[string]any{"items": []Transition{}, "total": 0, "page": 1, "page_size": 50}},
		{"wakes", WakesAnswer{AppID: "a", Wakes: []WakeView{}}, map[string]any{"app_id": "a", "wakes": []WakeView{}}},
		{"wake", WakeAnswer{AppID: "a", Asked: true, Status: StatusDown},
			map[string]any{"app_id": "a", "asked": true, "status": StatusDown}},
		{"sleep", SleepAnswer{AppID: "a", Status: StatusUp, SleepAsked: ask, Open: 3},
			map[string]any{"app_id": "a", "status": StatusUp, "sleep_asked": ask, "open": 3}},
		{"hold", HoldAnswer{AppID: "a", Status: StatusUp, Hold: hold},
			map[string]any{"app_id": "a", "status": StatusUp, "hold": hold}},
		{"release, none", ReleaseAnswer{AppID: "a", Reason: "the app has no active hold"},
			map[string]any{"app_id": "a", "released": false, "reason": "the app has no active hold"}},
		{"release", ReleaseAnswer{AppID: "a", Released: true, Status: StatusUp, Hold: hold},
			map[string]any{"app_id": "a", "released": true, "status": StatusUp, "hold": hold}},
		{"reset", ResetAnswer{AppID: "a", Status: StatusWaitingForInit},
			map[string]any{"app_id": "a", "status": StatusWaitingForInit}},
		{"savings", SavingsAnswer{Apps: []SavingsView{}, Total: SavingsTotal{Currency: "EUR"}},
			map[string]any{"apps": []SavingsView{}, "total": SavingsTotal{Currency: "EUR"}}},
	} {
		got, err := json.MarshalIndent(c.typed, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.MarshalIndent(c.was, "", "  ")
		if string(got) != string(want) {
			t.Errorf("%s: encodes as\n%s\nwant\n%s", c.name, got, want)
		}
	}
}

// Every route of the handler lies under AdminPrefixes, which the admin
// listener mounts it on: a route outside them would be unreachable.
func TestAdminPrefixes_CoverEveryRoute(t *testing.T) {
	routes := (&AdminAPI{}).Handler().(*http.ServeMux)
	mounted := http.NewServeMux()
	for _, p := range AdminPrefixes {
		mounted.Handle(p, http.NotFoundHandler())
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/apps"}, {"GET", "/api/apps/a"}, {"GET", "/api/apps/a/history"}, {"GET", "/api/apps/a/awake"},
		{"GET", "/api/apps/a/wakes"}, {"GET", "/api/apps/a/prewake"}, {"POST", "/api/apps/a/_wake"},
		{"POST", "/api/apps/a/_sleep"}, {"POST", "/api/apps/a/_reap"}, {"POST", "/api/apps/a/_hold"},
		{"DELETE", "/api/apps/a/_hold"}, {"POST", "/api/apps/a/_reset"}, {"GET", "/api/events"},
		{"GET", "/api/savings"}, {"GET", "/api/apps/a/savings"}, {"GET", "/api/settings"}, {"PUT", "/api/settings"},
	} {
		req := httptest.NewRequest(r.method, r.path, nil)
		if _, p := routes.Handler(req); p == "" {
			t.Errorf("%s %s: the handler has no such route", r.method, r.path)
		}
		if _, p := mounted.Handler(req); p == "" {
			t.Errorf("%s %s: not under AdminPrefixes %v", r.method, r.path, AdminPrefixes)
		}
	}
}

package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/trigger"
)

const testToken = "tok-9f3c2b7e-admin"

// call is a request the fake admin API received.
type call struct {
	method, path string
	body         map[string]string
}

// fakeAPI answers the admin API's calls from fixed data and records them.
type fakeAPI struct {
	mu       sync.Mutex
	apps     []reaper.AppView
	settings reaper.Settings
	savings  any // nil: 404, as a node without the savings endpoints
	refuse   map[string]string
	calls    []call
	storeErr string         // when set, the apps and the settings answer 503 with it
	triggers []trigger.View // nil: 404, as a node without the triggers' list
}

func (f *fakeAPI) record(r *http.Request) call {
	c := call{method: r.Method, path: r.URL.RequestURI()}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &c.body)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return c
}

func (f *fakeAPI) writes() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.method != http.MethodGet {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/apps", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.storeErr != "" {
			httpjson.Error(w, 503, f.storeErr)
			return
		}
		httpjson.Write(w, 200, f.apps)
	})
	mux.HandleFunc("GET /api/apps/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, a := range f.apps {
			if a.AppID == r.PathValue("id") {
				httpjson.Write(w, 200, a)
				return
			}
		}
		httpjson.Error(w, 404, "no app")
	})
	mux.HandleFunc("GET /api/apps/{id}/history", func(w http.ResponseWriter, r *http.Request) {
		at := t0.Add(-time.Minute)
		items := []reaper.Transition{
			{AppID: r.PathValue("id"), Kind: reaper.EventHold, At: at, By: "bob", Cause: "demo on Friday",
				Hold: &reaper.KeepWarm{Until: at.Add(6 * time.Hour), Reason: "demo on Friday", By: "bob"}},
			{AppID: r.PathValue("id"), From: "Down", To: "WaitingForUp", Cause: "woken: a wake was asked", At: at.Add(-time.Minute)},
		}
		httpjson.Write(w, 200, map[string]any{"items": items, "total": 60, "page": 1, "page_size": historyPage})
	})
	mux.HandleFunc("GET /api/apps/{id}/wakes", func(w http.ResponseWriter, r *http.Request) {
		ask := t0.Add(-time.Hour)
		wt := reaper.WakeTimes{AskedAt: ask, AcceptedAt: ask.Add(100 * time.Millisecond), UpAt: ask.Add(2100 * time.Millisecond), FirstAnswerAt: ask.Add(2300 * time.Millisecond)}
		httpjson.Write(w, 200, map[string]any{"wakes": []reaper.WakeView{{WakeTimes: wt, Phases: wt.Durations(), Seconds: wt.Total().Seconds()}}})
	})
	mux.HandleFunc("GET /api/apps/{id}/awake", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, 200, reaper.AwakeReport{AppID: r.PathValue("id"), Since: t0, Requests: 3, Nodes: []string{"n1"},
			Paths: []reaper.AwakeCount{{Value: "/checkout", Count: 3}}})
	})
	mux.HandleFunc("GET /api/settings", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.storeErr != "" {
			httpjson.Error(w, 503, f.storeErr)
			return
		}
		httpjson.Write(w, 200, f.settings)
	})
	mux.HandleFunc("PUT /api/settings", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, call{method: r.Method, path: r.URL.Path, body: map[string]string{"raw": string(b)}})
		_ = json.Unmarshal(b, &f.settings)
		f.mu.Unlock()
		httpjson.Write(w, 200, f.settings)
	})
	mux.HandleFunc("GET "+trigger.AdminPath, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.triggers == nil {
			httpjson.Error(w, 404, "no such admin endpoint")
			return
		}
		httpjson.Write(w, 200, trigger.Answer{Triggers: f.triggers})
	})
	mux.HandleFunc("GET /api/savings", func(w http.ResponseWriter, r *http.Request) {
		if f.savings == nil {
			httpjson.Error(w, 404, "no such admin endpoint")
			return
		}
		httpjson.Write(w, 200, f.savings)
	})
	for _, a := range []string{"_wake", "_sleep", "_hold", "_reset"} {
		mux.HandleFunc("POST /api/apps/{id}/"+a, f.action)
	}
	mux.HandleFunc("DELETE /api/apps/{id}/_hold", f.action)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		httpjson.Error(w, 404, "no such admin endpoint: "+r.URL.Path)
	})
	return mux
}

func (f *fakeAPI) action(w http.ResponseWriter, r *http.Request) {
	c := f.record(r)
	if msg, ok := f.refuse[strings.TrimPrefix(r.URL.Path, "/api/apps/"+r.PathValue("id")+"/")]; ok {
		httpjson.Error(w, http.StatusConflict, msg)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "_hold") && r.Method == http.MethodPost:
		httpjson.Write(w, 200, map[string]any{"hold": reaper.KeepWarm{Until: t0.Add(6 * time.Hour), Reason: c.body["reason"]}})
	case strings.HasSuffix(r.URL.Path, "_hold"):
		httpjson.Write(w, 200, map[string]any{"released": true})
	default:
		httpjson.Write(w, 202, map[string]any{"status": "Down"})
	}
}

func testApps() []reaper.AppView {
	up, down := t0.Add(-10*time.Minute), t0.Add(-2*time.Hour)
	reap := time.Now().Add(20 * time.Minute)
	return []reaper.AppView{
		{AppID: "shop", Name: "Shop", Status: reaper.StatusUp, Routes: []string{"shop"}, Managed: true, LastStatusUpdate: &up,
			LastCheckAt: ptr(time.Now()), ReapAt: &reap, Held: 2,
			Hold:        &reaper.KeepWarm{Until: t0.Add(6 * time.Hour), Reason: "demo on Friday", By: "bob"},
			GracePeriod: "2s", GracePeriodFrom: "label reaper.grace_period of container shop-1",
			Busy:    &reaper.BusyNote{Since: t0, Why: "busy: its busy_url answered 200"},
			BusyURL: "http://shop-1:8080/busy", BusyURLFrom: "label reaper.busy_url of container shop-1", BusyMax: "1h0m0s",
			BootTime: "1.234s", MemoryBytes: 40064 << 10, MemoryAt: ptr(time.Now().Add(-time.Minute)),
			DependsOn: []string{"db", "cache"}},
		{AppID: "blog", Status: reaper.StatusDown, Routes: []string{"blog", "blog-www"}, Managed: true, LastStatusUpdate: &down,
			LastCheckAt: ptr(time.Now())},
		{AppID: "crm", Status: reaper.StatusError, ErrorCause: "the deployment failed", Routes: []string{"crm"}, Managed: true,
			LastCheckAt: ptr(time.Now()), GracePeriod: "1h0m0s", PolicyError: `container crm-1: label reaper.grace_period: "soon" is not a duration`,
			DependsOnError: "depends_on makes a cycle (crm → mail → crm): ignored"},
	}
}

func ptr[T any](v T) *T { return &v }

// testDash is a dashboard over a fake API, with its log.
type testDash struct {
	*Dashboard
	api *fakeAPI
	log *bytes.Buffer
	srv http.Handler
}

func newTestDash(t *testing.T) *testDash {
	t.Helper()
	f := &fakeAPI{apps: testApps(), refuse: map[string]string{}}
	var log bytes.Buffer
	d := New(Options{Token: testToken, API: f.handler(), Node: "n1", Store: "memory",
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
		HeldElsewhere: func(context.Context) []NodeHeld {
			return []NodeHeld{{Node: "n2", Held: map[string]int{"shop": 1}}}
		}})
	return &testDash{Dashboard: d, api: f, log: &log, srv: d.Handler()}
}

// do serves a request from a browser with the given cookies.
func (td *testDash) do(method, target string, form url.Values, cookies []*http.Cookie, header ...string) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	r.RemoteAddr = "192.0.2.10:40000"
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	td.srv.ServeHTTP(w, r)
	return w
}

// signIn signs a browser in as name and returns its cookies and CSRF token.
func (td *testDash) signIn(t *testing.T, name string) ([]*http.Cookie, string) {
	t.Helper()
	form := td.do("GET", "/login", nil, nil)
	login := cookieNamed(form.Result().Cookies(), loginCookie)
	if login == nil {
		t.Fatal("the sign-in form set no login cookie")
	}
	res := td.do("POST", "/login", url.Values{"token": {testToken}, "name": {name}, "next": {"/"},
		csrfField: {fieldValue(t, form.Body.String(), "csrf")}}, []*http.Cookie{login})
	s := cookieNamed(res.Result().Cookies(), SessionCookie)
	if res.Code != http.StatusSeeOther || s == nil {
		t.Fatalf("sign-in: %d, session cookie %v; body %s", res.Code, s, res.Body)
	}
	sess, _ := td.keys.decodeSession(s.Value, time.Now())
	return []*http.Cookie{s}, td.keys.csrf(sess)
}

func cookieNamed(cs []*http.Cookie, name string) *http.Cookie {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// fieldValue finds the value of the hidden input named name in a page.
func fieldValue(t *testing.T, page, name string) string {
	t.Helper()
	marker := `name="` + name + `" value="`
	i := strings.Index(page, marker)
	if i < 0 {
		t.Fatalf("no input %q in the page", name)
	}
	rest := page[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

package adminapi_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/reaper"
)

const token = "tok-adminapi-test"

// node runs a reaper node's engine and job (over the recording fake driver)
// managing app "a", asleep, and returns its admin API's handler.
func node(t *testing.T) http.Handler {
	t.Helper()
	store, err := reaper.NewMemStore(reaper.MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	engine := reaper.NewEngine(reaper.EngineOptions{Node: "n1", Store: store})
	job := reaper.NewJob(reaper.JobOptions{Engine: engine, Store: store, PaaS: paastest.New("a")})
	engine.SetAsker(job)
	cfg := reaper.DefaultConfig()
	cfg.AppID = "a"
	engine.Register("route", "route", &cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { store.Run(ctx) })
	wg.Go(func() { engine.Run(ctx) })
	wg.Go(func() { job.Run(ctx, 0) })
	t.Cleanup(func() {
		engine.Shutdown()
		cancel()
		wg.Wait()
		_ = store.Close()
	})
	testwait.For(t, 10*time.Second, "the job to observe app a", func() bool {
		rec, ok, _ := store.Record(context.Background(), "a")
		return ok && rec.Status == reaper.StatusDown
	})
	return (&reaper.AdminAPI{Engine: engine, Store: store}).Handler()
}

// behindToken serves h over the network behind the admin token, as the admin
// listener does.
func behindToken(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error": "the admin token is missing or wrong"}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// clients are the two ways to the same handler: over the network with the
// token, and in the process.
func clients(t *testing.T, h http.Handler) map[string]*adminapi.Client {
	return map[string]*adminapi.Client{
		"network":    {Base: behindToken(t, h), Token: token, Timeout: 15 * time.Second},
		"in-process": adminapi.InProcess(h, "test"),
	}
}

// Every page and action answers its type, decoded from a real node's handler,
// over the network and in the process alike.
func TestClient_TypedAnswersFromARealHandler(t *testing.T) {
	for name, c := range clients(t, node(t)) {
		t.Run(name, func(t *testing.T) {
			ctx, by := context.Background(), reaper.ActionRequest{By: "ops " + name}
			apps, err := c.Apps(ctx)
			if err != nil || len(apps) != 1 || apps[0].AppID != "a" || !apps[0].Managed {
				t.Fatalf("Apps: %+v, %v; want app a, managed", apps, err)
			}
			hold, err := c.Hold(ctx, "a", reaper.ActionRequest{By: by.By, Duration: "6h", Reason: "backup"})
			if err != nil || hold.AppID != "a" || hold.Hold == nil || hold.Hold.Reason != "backup" || hold.Hold.By != by.By {
				t.Fatalf("Hold: %+v, %v", hold, err)
			}
			app, err := c.App(ctx, "a")
			if err != nil || app.Hold == nil || app.Hold.Reason != "backup" {
				t.Fatalf("App after the hold: %+v, %v; want its hold", app, err)
			}
			rel, err := c.Release(ctx, "a", by)
			if err != nil || !rel.Released || rel.Hold == nil || rel.Hold.ReleasedBy != by.By {
				t.Fatalf("Release: %+v, %v", rel, err)
			}
			if rel, err = c.Release(ctx, "a", by); err != nil || rel.Released || rel.Reason == "" {
				t.Fatalf("Release again: %+v, %v; want not released, and why", rel, err)
			}
			h, err := c.History(ctx, "a", 1, 2)
			if err != nil || h.Page != 1 || h.PageSize != 2 || len(h.Items) != 2 || h.Total < 2 || h.Items[0].Kind != reaper.EventRelease {
				t.Fatalf("History: %+v, %v; want the release first, on a page of 2", h, err)
			}
			wake, err := c.Wake(ctx, "a", by)
			if err != nil || !wake.Asked || wake.AppID != "a" {
				t.Fatalf("Wake: %+v, %v", wake, err)
			}
			if w, err := c.Wakes(ctx, "a", 5); err != nil || w.AppID != "a" || w.Wakes == nil {
				t.Fatalf("Wakes: %+v, %v", w, err)
			}
			if _, err := c.Awake(ctx, "a"); err != nil {
				t.Fatalf("Awake: %v", err)
			}
			if p, err := c.Prewake(ctx, "a"); err != nil || p.AppID != "a" {
				t.Fatalf("Prewake: %+v, %v", p, err)
			}
			if s, err := c.Savings(ctx); err != nil || len(s.Apps) != 1 || s.Apps[0].AppID != "a" {
				t.Fatalf("Savings: %+v, %v", s, err)
			}
			if s, err := c.AppSavings(ctx, "a"); err != nil || s.AppID != "a" {
				t.Fatalf("AppSavings: %+v, %v", s, err)
			}
			if s, err := c.PutSettings(ctx, reaper.Settings{KillSwitch: true}); err != nil || !s.KillSwitch {
				t.Fatalf("PutSettings: %+v, %v", s, err)
			}
			_, err = c.Sleep(ctx, "a", true, by)
			if e := (*adminapi.Error)(nil); !errors.As(err, &e) || e.Status != http.StatusConflict || !strings.Contains(e.Message, "kill switch") {
				t.Fatalf("Sleep under the kill switch: %v; want a 409 *Error saying the kill switch", err)
			}
			if _, err := c.PutSettings(ctx, reaper.Settings{}); err != nil {
				t.Fatal(err)
			}
			if s, err := c.Settings(ctx); err != nil || s.KillSwitch {
				t.Fatalf("Settings: %+v, %v; want the kill switch off", s, err)
			}
			reset, err := c.Reset(ctx, "a", by)
			if err != nil || reset.AppID != "a" || reset.Status != reaper.StatusWaitingForInit {
				t.Fatalf("Reset: %+v, %v", reset, err)
			}
			// The job looks at the reset app and writes what it finds, with
			// its history entry: done before the next client's actions, so
			// that it cannot fall between that client's release and its
			// read of the history.
			testwait.For(t, 10*time.Second, "the job to observe app a after its reset", func() bool {
				app, err := c.App(ctx, "a")
				return err == nil && app.Status != reaper.StatusWaitingForInit
			})
		})
	}
}

// A refusal is an *Error with the API's status and message, whichever way the
// client goes; what is no answer of the API is not.
func TestClient_ErrorsAreTyped(t *testing.T) {
	h := node(t)
	for name, c := range clients(t, h) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			_, err := c.App(ctx, "nope")
			var e *adminapi.Error
			if !errors.As(err, &e) || e.Status != 404 || e.Message != `no app "nope"` || adminapi.StatusOf(err) != 404 {
				t.Fatalf("App(nope): %v; want a 404 *Error saying no app", err)
			}
			_, err = c.Hold(ctx, "a", reaper.ActionRequest{Duration: "forever"})
			if adminapi.StatusOf(err) != 400 || !strings.Contains(err.Error(), `duration "forever"`) {
				t.Fatalf("Hold forever: %v; want a 400 naming the duration", err)
			}
			if _, err := c.Cluster(ctx, false); adminapi.StatusOf(err) != 404 {
				t.Fatalf("Cluster on a handler without one: %v; want 404", err)
			}
		})
	}
	ctx := context.Background()
	wrong := &adminapi.Client{Base: behindToken(t, h), Token: "wrong"}
	if _, err := wrong.Apps(ctx); adminapi.StatusOf(err) != 401 || !strings.Contains(err.Error(), "admin token") {
		t.Errorf("a wrong token: %v; want a 401 *Error with the API's message", err)
	}
	gone := &adminapi.Client{Base: "http://127.0.0.1:1", Token: token}
	if _, err := gone.Apps(ctx); err == nil || adminapi.StatusOf(err) != 0 || errors.Is(err, adminapi.ErrAnswer) {
		t.Errorf("nothing listening: %v; want a transport error, no status", err)
	}
}

// A 2xx that is not the call's answer wraps ErrAnswer, and so does one larger
// than MaxAnswer; WithRaw keeps the answer's bytes as they came.
func TestClient_AnswersOfAnotherShape(t *testing.T) {
	body := "[\n  {\"app_id\": \"a\", \"status\": \"Up\", \"extra\": 1}\n]\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/settings" {
			w.Write([]byte("hello"))
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	c := &adminapi.Client{Base: srv.URL}
	var raw []byte
	apps, err := c.Apps(adminapi.WithRaw(context.Background(), &raw))
	if err != nil || len(apps) != 1 || apps[0].Status != reaper.StatusUp || string(raw) != body {
		t.Fatalf("Apps: %+v, %v, raw %q; want one app Up and the bytes as sent", apps, err, raw)
	}
	if _, err := c.Settings(context.Background()); !errors.Is(err, adminapi.ErrAnswer) {
		t.Errorf("Settings answered hello: %v; want ErrAnswer", err)
	}
	small := &adminapi.Client{Base: srv.URL, MaxAnswer: 10}
	if _, err := small.Apps(context.Background()); !errors.Is(err, adminapi.ErrAnswer) || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("an answer past MaxAnswer: %v; want ErrAnswer saying so", err)
	}
}

// The event stream opens with the API's retry line; a refusal is an *Error.
func TestClient_Events(t *testing.T) {
	base := behindToken(t, node(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, err := (&adminapi.Client{Base: base, Token: token}).Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	if line, err := bufio.NewReader(body).ReadString('\n'); err != nil || line != "retry: 2000\n" {
		t.Fatalf("the stream begins with %q, %v; want its retry line", line, err)
	}
	_, err = (&adminapi.Client{Base: base, Token: "wrong"}).Events(ctx, "7")
	if adminapi.StatusOf(err) != 401 {
		t.Fatalf("Events with a wrong token: %v; want a 401 *Error", err)
	}
}

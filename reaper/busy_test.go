package reaper

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/paastest"
)

func TestBusyVerdict(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const max = time.Hour
	tests := []struct {
		name          string
		a             BusyAnswers
		now           time.Time
		postpone, ask bool
		why           string
	}{
		{"never asked: ask, and wait for the answer", BusyAnswers{}, t0, true, true, "asking"},
		{"busy, fresh", BusyAnswers{Last: busyYes, At: t0, Detail: "answered 200"}, t0.Add(time.Second), true, false, "busy: its busy_url answered 200"},
		{"busy, stale: ask again", BusyAnswers{Last: busyYes, At: t0, Detail: "answered 200"}, t0.Add(busyFresh + time.Second), true, true, "asking"},
		{"idle, fresh: sleep", BusyAnswers{Last: busyIdle, At: t0, Detail: "answered 204"}, t0.Add(time.Second), false, false, "idle"},
		{"idle, stale: ask again before sleeping", BusyAnswers{Last: busyIdle, At: t0, Detail: "answered 404"}, t0.Add(time.Minute), true, true, "asking"},
		{"an answer from the future (a clock that moved back) is not trusted", BusyAnswers{Last: busyIdle, At: t0.Add(time.Hour)}, t0, true, true, "asking"},
		{"failing for a minute: busy", BusyAnswers{Last: busyFailed, At: t0.Add(time.Minute), FailingSince: t0, Detail: "answered 500"},
			t0.Add(time.Minute + time.Second), true, false, "busy for at most 58m59s more: its busy_url fails (answered 500) since 2026-01-01T12:00:00Z"},
		{"failing just under busy_max: still busy", BusyAnswers{Last: busyFailed, At: t0.Add(max - time.Second), FailingSince: t0},
			t0.Add(max - time.Millisecond), true, false, "busy for at most"},
		{"failing for busy_max: sleep", BusyAnswers{Last: busyFailed, At: t0.Add(max), FailingSince: t0, Detail: "no answer within 3s"},
			t0.Add(max), false, false, "fails (no answer within 3s) for longer than busy_max (1h0m0s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			postpone, ask, why := busyVerdict(tc.a, tc.now, busyFresh, max)
			if postpone != tc.postpone || ask != tc.ask || !strings.Contains(why, tc.why) {
				t.Errorf("busyVerdict = %v, %v, %q; want %v, %v, containing %q", postpone, ask, why, tc.postpone, tc.ask, tc.why)
			}
		})
	}
}

func TestBusyPostponed_KeepsTheRecordAndTheFirstPostponement(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := Record{AppID: "w", Status: StatusUp, Cause: "woke up"}
	next := Record{AppID: "w", Status: StatusWaitingForShutdown, Cause: "idle for 1m0s", LastCheckAt: t0}
	got := busyPostponed(rec, next, "busy: its busy_url answered 200", t0)
	if got.Status != StatusUp || got.Cause != "woke up" || got.LastCheckAt != t0 || got.Busy == nil || !got.Busy.Since.Equal(t0) {
		t.Fatalf("postponed = %+v (busy %+v)", got, got.Busy)
	}
	again := busyPostponed(got, next, "busy: its busy_url answered 200", t0.Add(time.Minute))
	if !again.Busy.Since.Equal(t0) {
		t.Errorf("a second postponement moved Since to %v, want the first's %v", again.Busy.Since, t0)
	}
}

func TestConfig_BusyURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		max     time.Duration
		wantErr string
	}{
		{"http://127.0.0.1:3001/busy", time.Hour, ""},
		{"https://worker.internal/busy?token=s3cret", time.Minute, ""},
		{"", time.Hour, ""},
		{"127.0.0.1:3001/busy", time.Hour, "config.busy_url: is not an http(s) URL"},
		{"ftp://x/busy", time.Hour, "config.busy_url: is not an http(s) URL"},
		{"http://user:s3cret@x/busy", time.Hour, "config.busy_url: must not hold a user or password"},
		{"http://x/busy", 0, "config.busy_max: 0s is not from 1s to 168h0m0s"},
		{"http://x/busy", 8 * 24 * time.Hour, "config.busy_max: 192h0m0s is not from 1s"},
	} {
		c := config("app", func(c *Config) { c.BusyURL, c.BusyMax = tc.url, conf.Duration(tc.max) })
		var errs conf.Errors
		c.Validate("config", &errs)
		err := errs.Err()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.url, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q, %v: error %v, want %q", tc.url, tc.max, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

// realEnv is env on the real clock with short intervals, for tests that talk to
// real HTTP servers (outside a synctest bubble). It polls with deadlines only.
func realEnv(t *testing.T, fake *paastest.Fake, busyTimeout time.Duration) *env {
	t.Helper()
	logs := &logtest.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	store, err := NewMemStore(MemStoreOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, fake: fake, logs: logs}
	e.engine = NewEngine(EngineOptions{Node: "n1", Store: store, Logger: logger, FlushInterval: 50 * time.Millisecond})
	e.job = NewJob(JobOptions{Engine: e.engine, Store: store, PaaS: fake, Logger: logger,
		FastInterval: 50 * time.Millisecond, FullInterval: 100 * time.Millisecond, BusyTimeout: busyTimeout})
	e.engine.SetAsker(e.job)
	return e
}

// A worker that says it is busy (200) stays up past its grace period, looked
// at again each pass; once it says it is idle (204), it is put to sleep.
func TestBusyURL_BusyWorkerStaysUpAndSleepsOnceIdle(t *testing.T) {
	var status atomic.Int32
	var asked atomic.Int32
	status.Store(http.StatusOK)
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	defer worker.Close()

	e := realEnv(t, upApp("worker"), 0)
	p := e.route(config("worker", func(c *Config) {
		c.GracePeriod = conf.Duration(200 * time.Millisecond)
		c.BusyURL = worker.URL + "/busy?token=s3cret"
	}))
	e.start()
	defer e.stop()
	testwait.For(t, 30*time.Second, "the app seen up", func() bool { return p.route.a.status() == StatusUp })

	// Idle since its start, and busy: asked again and again, never stopped.
	defer func() {
		if t.Failed() {
			t.Logf("busy_url asked %d times; logs:\n%s", asked.Load(), e.logs.String())
		}
	}()
	testwait.For(t, 30*time.Second, "busy_url asked 5 times", func() bool {
		if st := p.route.a.status(); st != StatusUp {
			t.Fatalf("status = %s while its busy_url answers 200, want Up", st)
		}
		return asked.Load() >= 5
	})
	if n := e.fake.Count("stop", "worker"); n != 0 {
		t.Fatalf("stopped %d times while busy", n)
	}
	// The view says so (between two answers it says the URL is being asked).
	admin := &AdminAPI{Engine: e.engine, Store: e.store}
	testwait.For(t, 30*time.Second, "the app's view says it is busy", func() bool {
		views, err := admin.views(context.Background(), "worker")
		if err != nil || len(views) != 1 {
			t.Fatalf("views = %+v, %v", views, err)
		}
		b := views[0].Busy
		return b != nil && strings.Contains(b.Why, "busy: its busy_url answered 200")
	})

	status.Store(http.StatusNoContent)
	testwait.For(t, 30*time.Second, "asleep once its busy_url answers 204", func() bool { return p.route.a.status() == StatusDown })
	if n := e.fake.Count("stop", "worker"); n != 1 {
		t.Errorf("stops = %d, want 1", n)
	}
	logs := e.logs.String()
	if strings.Count(logs, "says it is busy") != 1 || !strings.Contains(logs, "says it is idle again") {
		t.Errorf("want one line for busy and one for idle again, got:\n%s", logs)
	}
	if strings.Contains(logs, "s3cret") {
		t.Errorf("the logs show the busy_url's token:\n%s", logs)
	}
	if rec, _ := e.engine.Record("worker"); rec.Busy != nil {
		t.Errorf("the record still says busy: %+v", rec.Busy)
	}
}

// A busy_url that fails (its worker is gone) keeps the app up for busy_max
// from the first failure, logged once, then lets it sleep. A busy_url that
// hangs holds up no other app: the job puts an idle neighbour to sleep on time.
func TestBusyURL_FailingOrSlowURLKeepsUpForBusyMaxOnly(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // connection refused

	e := realEnv(t, upApp("hung", "dead", "plain"), 200*time.Millisecond)
	var routes []*Plugin
	for _, c := range []struct{ id, url string }{{"hung", slow.URL}, {"dead", gone.URL}, {"plain", ""}} {
		routes = append(routes, e.route(config(c.id, func(cfg *Config) {
			cfg.GracePeriod = conf.Duration(100 * time.Millisecond)
			cfg.BusyURL, cfg.BusyMax = c.url, conf.Duration(time.Second)
		})))
	}
	e.start()
	defer e.stop()
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs.String())
		}
	}()
	testwait.For(t, 30*time.Second, "the app without a busy_url asleep", func() bool { return routes[2].route.a.status() == StatusDown })
	testwait.For(t, 30*time.Second, "both apps with a failing busy_url asleep after busy_max", func() bool {
		return routes[0].route.a.status() == StatusDown && routes[1].route.a.status() == StatusDown
	})
	for _, id := range []string{"hung", "dead"} {
		hist, _, err := e.store.History(context.Background(), id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var up, down time.Time
		for _, h := range hist {
			switch {
			case h.To == StatusUp && up.IsZero():
				up = h.At
			case h.To == StatusWaitingForShutdown:
				down = h.At
			}
		}
		// A lower bound only: the grace period, then at least busy_max of
		// failures (a loaded machine only makes it longer).
		if down.IsZero() || down.Sub(up) < time.Second {
			t.Errorf("%s: up at %v, put to sleep at %v: want at least busy_max (1s) after it", id, up, down)
		}
	}
	logs := e.logs.String()
	if n := strings.Count(logs, "busy_url fails"); n != 2 {
		t.Errorf("%d lines say a busy_url fails, want one per app", n)
	}
	if !strings.Contains(logs, "no answer within 200ms") || !strings.Contains(logs, "connection refused") {
		t.Errorf("the logs do not say how each busy_url failed:\n%s", logs)
	}
}

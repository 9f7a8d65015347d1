package clevercloud

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
	"github.com/reapergw/reaper/reaper"
)

// The report of issue 10, item 5: the API answered a wake's calls with 12 rate
// limits in a row, then recovered; the start went out only after the requests
// held for it had got their 504 at the 90 s fail timeout. Here the reaper job
// itself drives the driver, with the driver's production settings, against the
// fake served in process, in a bubble where the minutes pass in milliseconds.
func TestWake_StartGoesOutSoonAfterARateLimitStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const failTimeout = 90 * time.Second
		f := fakeclever.New(fakeclever.Options{Token: testToken, DeployDelay: 5 * time.Second, BootTime: 20 * time.Second})
		a := f.AddApp(fakeclever.App{Owner: orga, State: fakeclever.StateShouldBeDown})
		started := make(chan time.Time, 1)
		log := slog.New(slog.DiscardHandler)
		c, err := New(Config{Token: conf.Secret(testToken)}, Options{Logger: log, Transport: startSpy{f.Transport(), started}})
		if err != nil {
			t.Fatal(err)
		}
		job := newJob(t, c, a.ID, failTimeout, log)

		f.Inject("", fakeclever.Fault{Kind: fakeclever.FaultTooMany429, Count: 12})
		asked := time.Now()
		job.wake(a.ID)

		var at time.Time
		select {
		case at = <-started:
		case <-time.After(failTimeout):
			t.Fatalf("no start reached the API within the %v fail timeout; calls:\n%s", failTimeout, callLog(f, asked))
		}
		var recovered time.Time // the last rate-limit answer
		limited := 0
		for _, call := range f.Calls() {
			if call.Fault != "" {
				limited++
				recovered = call.At
			}
		}
		if limited != 12 {
			t.Fatalf("%d calls were rate limited, want the 12 of the storm; calls:\n%s", limited, callLog(f, asked))
		}
		// Once the API answers again, the start goes out within one back-off
		// step, or the job's next look (its fast tick), whichever is longer.
		if late, step := at.Sub(recovered), max(DefaultRateLimitMax, fastTick)+time.Second; late > step {
			t.Errorf("the start went out %v after the API recovered, want within %v; calls:\n%s", late, step, callLog(f, asked))
		}
		// Twelve refusals cost at most a back-off step or a tick each; what is
		// left of the fail timeout is the app's to boot in.
		if took := at.Sub(asked); took > 60*time.Second {
			t.Errorf("the start went out %v after the wake was asked, want well within the %v fail timeout; calls:\n%s",
				took, failTimeout, callLog(f, asked))
		}
		if n := f.Starts(a.ID); n != 1 {
			t.Errorf("%d starts, want 1", n)
		}
	})
}

// startSpy passes calls on, and sends the time of the first start the API
// accepted.
type startSpy struct {
	next    http.RoundTripper
	started chan time.Time
}

func (s startSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/instances") && resp.StatusCode/100 == 2 {
		select {
		case s.started <- time.Now():
		default:
		}
	}
	return resp, err
}

// fastTick is the job's default fast interval: how soon it looks again at an app
// whose start was refused.
const fastTick = 5 * time.Second

// testJob is the reaper job of one node, with an in-memory store, driving c.
type testJob struct {
	store *reaper.MemStore
	job   *reaper.Job
}

// newJob runs a node's engine and job over c, managing the app with failTimeout,
// until the test ends.
func newJob(t *testing.T, c paas.Client, appID string, failTimeout time.Duration, log *slog.Logger) *testJob {
	t.Helper()
	store, err := reaper.NewMemStore(reaper.MemStoreOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	engine := reaper.NewEngine(reaper.EngineOptions{Node: "n1", Store: store, Logger: log})
	job := reaper.NewJob(reaper.JobOptions{Engine: engine, Store: store, PaaS: c, Logger: log})
	engine.SetAsker(job)
	cfg := reaper.DefaultConfig()
	cfg.AppID, cfg.OwnerID, cfg.FailTimeout = appID, orga, conf.Duration(failTimeout)
	var errs conf.Errors
	cfg.Validate("config", &errs)
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
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
	return &testJob{store: store, job: job}
}

// wake stores a wake ask for the app and tells the job, as a held request does.
func (j *testJob) wake(appID string) {
	_ = j.store.AskWake(context.Background(), appID, time.Now(), 30*time.Minute)
	_ = j.job.Ask(context.Background(), appID)
}

// callLog lists the fake's calls, timed from begin.
func callLog(f *fakeclever.Fake, begin time.Time) string {
	var b strings.Builder
	for _, c := range f.Calls() {
		b.WriteString("  +" + c.At.Sub(begin).String() + " " + c.Method + " " + c.Path)
		if c.Fault != "" {
			b.WriteString(" → " + c.Fault)
		}
		b.WriteString("\n")
	}
	return b.String()
}

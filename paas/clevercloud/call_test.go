package clevercloud

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestErrors_Classes(t *testing.T) {
	type check func(t *testing.T, err error)
	ok := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
	}
	is := func(target error, retryable bool, words ...string) check {
		return func(t *testing.T, err error) {
			t.Helper()
			if err == nil || !errors.Is(err, target) || paas.Retryable(err) != retryable {
				t.Fatalf("error %v: want %v (retryable %v)", err, target, retryable)
			}
			for _, w := range words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		}
	}
	cases := []struct {
		name  string
		mod   func(f *fakeclever.Fake, c *Config, o *Options)
		fault *fakeclever.Fault
		op    string // observe (default), start, stop
		app   string // "" = the test app; "missing" = an unknown one
		check check
		calls int // API calls the fake must have seen
	}{
		{name: "401 token", mod: func(_ *fakeclever.Fake, c *Config, _ *Options) { c.Token = "tok-SECRET-wrong" },
			check: is(paas.ErrAuth, false, "the API token was refused (HTTP 401"), calls: 1},
		{name: "401 oauth", mod: func(f *fakeclever.Fake, c *Config, _ *Options) {
			oauthConfig(f, c)
			c.OAuth.Secret = "os-SECRET-wrong"
		}, check: is(paas.ErrAuth, false, "the OAuth credentials were refused (HTTP 401"), calls: 1},
		{name: "bearer on the API host", mod: func(f *fakeclever.Fake, c *Config, _ *Options) { c.APIURL = f.APIURL() },
			check: is(paas.ErrAuth, false, "the API token was refused", "bridge host only"), calls: 1},
		{name: "oauth on the bridge host", mod: func(f *fakeclever.Fake, c *Config, _ *Options) {
			oauthConfig(f, c)
			c.APIURL = f.BridgeURL()
		}, check: is(paas.ErrAuth, false, "the OAuth credentials were refused"), calls: 1},
		{name: "404", app: "missing", check: is(paas.ErrNotFound, false, "HTTP 404"), calls: 1},
		{name: "403 id 403", fault: &fakeclever.Fault{Kind: fakeclever.FaultRateLimit403, Count: 1},
			check: func(t *testing.T, err error) {
				var rl *paas.RateLimitError
				if !errors.As(err, &rl) || rl.RetryAfter != 0 || !paas.Retryable(err) || !errors.Is(err, paas.ErrRateLimited) {
					t.Fatalf("error %v", err)
				}
			}, calls: 1},
		{name: "429 with Retry-After", fault: &fakeclever.Fault{Kind: fakeclever.FaultTooMany429, Count: 1, RetryAfter: 7 * time.Second},
			check: func(t *testing.T, err error) {
				var rl *paas.RateLimitError
				if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
					t.Fatalf("error %v", err)
				}
			}, calls: 1},
		{name: "5xx retried then unavailable", fault: &fakeclever.Fault{Kind: fakeclever.Fault5xx},
			check: is(paas.ErrUnavailable, true, "the API failed (HTTP 503", "gave up after 3 attempts"), calls: 3},
		{name: "5xx retried then ok", fault: &fakeclever.Fault{Kind: fakeclever.Fault5xx, Count: 2, Status: 502},
			check: ok, calls: 3},
		{name: "5xx on a start is retried", op: "start", fault: &fakeclever.Fault{Kind: fakeclever.Fault5xx, Count: 1},
			check: ok, calls: 2},
		{name: "4014", op: "start", fault: &fakeclever.Fault{Kind: fakeclever.FaultNeverDeployed4014},
			check: is(paas.ErrNeverDeployed, false, "never deployed"), calls: 1},
		{name: "locked start", op: "start", fault: &fakeclever.Fault{Kind: fakeclever.FaultLocked},
			check: is(paas.ErrBusy, true, "locked"), calls: 1},
		{name: "locked stop", op: "stop", fault: &fakeclever.Fault{Kind: fakeclever.FaultLocked},
			check: is(paas.ErrBusy, true, "locked"), calls: 2},
		{name: "slow read times out and is retried", fault: &fakeclever.Fault{Kind: fakeclever.FaultSlow, Count: 1, Delay: time.Minute},
			mod:   func(_ *fakeclever.Fake, c *Config, _ *Options) { c.Timeout = conf.Duration(500 * time.Millisecond) },
			check: ok, calls: 2},
		{name: "slow start times out and is not sent again", op: "start",
			fault: &fakeclever.Fault{Kind: fakeclever.FaultSlow, Delay: time.Minute},
			mod:   func(_ *fakeclever.Fake, c *Config, _ *Options) { c.Timeout = conf.Duration(500 * time.Millisecond) },
			check: is(paas.ErrUnavailable, true, "no answer within 500ms"), calls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakeclever.Options{}, tc.mod)
			a := e.f.AddApp(fakeclever.App{Owner: orga, State: fakeclever.StateShouldBeDown})
			app := paas.App{ID: a.ID, Owner: orga}
			if tc.app == "missing" {
				app.ID = "app_00000000-0000-4000-8000-00000000dead"
			}
			if tc.fault != nil {
				e.f.Inject(a.ID, *tc.fault)
			}
			var err error
			switch tc.op {
			case "start":
				err = e.c.Start(context.Background(), app)
			case "stop":
				err = e.c.Stop(context.Background(), app)
			default:
				_, err = e.c.Observe(context.Background(), app)
			}
			tc.check(t, err)
			// The abandoned slow calls are recorded once the fake notices.
			testwait.Until(5*time.Second, func() bool { return len(e.f.Calls()) >= tc.calls })
			if got := len(e.f.Calls()); got != tc.calls {
				t.Errorf("%d calls at the fake, want %d: %+v", got, tc.calls, e.f.Calls())
			}
		})
	}
}

func TestErrors_RetryAfterIsHonouredByTheNextCall(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, nil)
	a := e.f.AddApp(fakeclever.App{Owner: orga})
	b := e.f.AddApp(fakeclever.App{Owner: orga})
	e.f.Inject(a.ID, fakeclever.Fault{Kind: fakeclever.FaultTooMany429, Count: 1, RetryAfter: time.Second})
	ctx := context.Background()
	if _, err := e.c.Observe(ctx, paas.App{ID: a.ID, Owner: orga}); !errors.Is(err, paas.ErrRateLimited) {
		t.Fatalf("first call: %v", err)
	}
	// Another app's call waits for the gate (GateWait is 2 s), then goes through.
	start := time.Now()
	if _, err := e.c.Observe(ctx, paas.App{ID: b.ID, Owner: orga}); err != nil {
		t.Fatal(err)
	}
	calls := e.f.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls %+v", calls)
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < time.Second {
		t.Errorf("second call %v after the rate limit, want at least 1s", gap)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("the caller waited %v", waited)
	}
}

func TestErrors_GateRefusesWithoutCallingWhenTheWaitIsTooLong(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, func(_ *fakeclever.Fake, _ *Config, o *Options) { o.GateWait = 50 * time.Millisecond })
	a := e.f.AddApp(fakeclever.App{Owner: orga})
	app := paas.App{ID: a.ID, Owner: orga}
	e.f.Inject("", fakeclever.Fault{Kind: fakeclever.FaultTooMany429, Count: 1, RetryAfter: 5 * time.Second})
	if _, err := e.c.Observe(context.Background(), app); !errors.Is(err, paas.ErrRateLimited) {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := e.c.Observe(context.Background(), app)
	var rl *paas.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter < 4*time.Second || time.Since(start) > time.Second {
		t.Fatalf("second call: %v after %v", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "the driver is backing off") {
		t.Errorf("error %q", err)
	}
	if n := len(e.f.Calls()); n != 1 {
		t.Errorf("%d calls at the fake, want 1", n)
	}
	// A context that ends sooner than the gate opens is refused at once too.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.c.Observe(ctx, app); !errors.Is(err, paas.ErrRateLimited) {
		t.Errorf("short context: %v", err)
	}
}

func TestErrors_ConnectionRefusedIsRetriedThenUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, op := range []string{"observe", "start"} {
		t.Run(op, func(t *testing.T) {
			e := newEnv(t, fakeclever.Options{}, func(_ *fakeclever.Fake, c *Config, _ *Options) { c.APIURL = "http://" + addr })
			app := paas.App{ID: "app_x", Owner: orga}
			if op == "start" {
				err = e.c.Start(context.Background(), app)
			} else {
				_, err = e.c.Observe(context.Background(), app)
			}
			if !errors.Is(err, paas.ErrUnavailable) || !strings.Contains(err.Error(), "cannot reach the API") {
				t.Fatalf("error %v", err)
			}
			// Nothing was sent: even a start is retried.
			if n := strings.Count(e.logs.String(), "call failed, retrying"); n != 2 {
				t.Errorf("%d retries logged, want 2", n)
			}
		})
	}
}

func TestErrors_CancelledContextStopsRetries(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, func(_ *fakeclever.Fake, _ *Config, o *Options) {
		o.RetryBase, o.RetryMax = time.Minute, time.Minute
	})
	a := e.f.AddApp(fakeclever.App{Owner: orga})
	e.f.Inject("", fakeclever.Fault{Kind: fakeclever.Fault5xx})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := e.c.Observe(ctx, paas.App{ID: a.ID, Owner: orga})
	// The retry waits a minute: the context's end cuts it short.
	if !errors.Is(err, paas.ErrUnavailable) || time.Since(start) > 10*time.Second {
		t.Fatalf("error %v after %v", err, time.Since(start))
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("multi-line error %q", err)
	}
	if n := len(e.f.Calls()); n != 1 {
		t.Errorf("%d calls", n)
	}
}

func TestErrors_LockedByARealDeployment(t *testing.T) {
	e := newEnv(t, fakeclever.Options{DeployDelay: time.Hour}, nil)
	a := e.f.AddApp(fakeclever.App{Owner: orga, State: fakeclever.StateShouldBeDown})
	app := paas.App{ID: a.ID, Owner: orga}
	if err := e.c.Start(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Start(context.Background(), app); !errors.Is(err, paas.ErrBusy) {
		t.Errorf("second start: %v", err)
	}
	if e.f.Starts(a.ID) != 1 {
		t.Errorf("starts %d", e.f.Starts(a.ID))
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": 0, "0": 0, "-3": 0, "5": 5 * time.Second, " 12 ": 12 * time.Second, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		"999999": maxRetryAfter,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestIsLocked(t *testing.T) {
	for _, c := range []struct {
		status int
		msg    string
		want   bool
	}{
		{409, "", true}, {400, "The application is locked", true}, {400, "A deployment is already in progress", true},
		{400, "bad request", false}, {500, "locked", false},
	} {
		if got := isLocked(c.status, apiError{Message: c.msg}); got != c.want {
			t.Errorf("isLocked(%d, %q) = %v", c.status, c.msg, got)
		}
	}
}

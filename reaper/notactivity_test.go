package reaper

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas/paastest"
)

func TestNotActivity_Config(t *testing.T) {
	tests := []struct {
		name    string
		paths   []string
		wantErr string // "" when valid
		match   map[string]bool
	}{
		{name: "the defaults", paths: DefaultNotActivity,
			match: map[string]bool{"/robots.txt": true, "/sitemap.xml": true, "/favicon.ico": true, "/": false, "/robots.txt/x": false}},
		{name: "a prefix", paths: []string{"/.well-known/*"},
			match: map[string]bool{"/.well-known/": true, "/.well-known/security.txt": true, "/.well-known": false}},
		{name: "none at all", paths: []string{}, match: map[string]bool{"/robots.txt": false}},
		{name: "no leading slash", paths: []string{"robots.txt"}, wantErr: `config.not_activity[0]: "robots.txt" must begin with /`},
		{name: "a star inside", paths: []string{"/ok", "/a*/b"}, wantErr: `config.not_activity[1]: "/a*/b" may hold one *, at its end only`},
		{name: "two stars", paths: []string{"/a**"}, wantErr: `config.not_activity[0]: "/a**" may hold one *`},
		{name: "a query", paths: []string{"/sitemap.xml?x=1"}, wantErr: `must be a path only`},
		{name: "too long", paths: []string{"/" + strings.Repeat("a", maxNotActivityPath)}, wantErr: `config.not_activity[0]: "/aaa`},
		{name: "too many", paths: make([]string, maxNotActivity+1), wantErr: `config.not_activity: lists 65 paths; at most 64`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.AppID = "app"
			c.NotActivity = tc.paths
			var errs conf.Errors
			c.Validate("config", &errs)
			err := errs.Err()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			for path, want := range tc.match {
				if got := c.isNotActivity(httptest.NewRequest("GET", path, nil)); got != want {
					t.Errorf("%s matches = %v, want %v", path, got, want)
				}
			}
		})
	}
}

// crawlEvery sends GET path to the route every interval until stop is closed.
func crawlEvery(p *Plugin, path string, interval time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			do(context.Background(), p, apiRequest("GET", path), false)
		}
	}
}

// A crawler that fetches /robots.txt every 100 ms, for far longer than the grace
// period, does not keep the app awake; the same crawler on a page does.
func TestNotActivity_RobotsTxtDoesNotKeepTheAppAwake(t *testing.T) {
	for _, tc := range []struct {
		path      string
		wantSleep bool
	}{{"/robots.txt", true}, {"/", false}} {
		t.Run(tc.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, upApp("app"), "")
				p := e.route(config("app", func(c *Config) { c.GracePeriod = conf.Duration(time.Minute) }))
				e.start()
				defer e.stop()
				settle()
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() { defer close(done); crawlEvery(p, tc.path, 100*time.Millisecond, stop) }()
				// A poll with a deadline: the grace period, a full pass and some.
				// Once asleep, the next robots.txt wakes it again to be answered:
				// what counts is that it was put to sleep at all.
				start := time.Now()
				deadline := start.Add(5 * time.Minute)
				for e.fake.Count("stop", "app") == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Second)
				}
				took := time.Since(start)
				close(stop)
				<-done
				slept := e.fake.Count("stop", "app") > 0
				if slept != tc.wantSleep {
					t.Fatalf("crawled %s every 100 ms for %v with a 1 min grace period: put to sleep = %v, want %v", tc.path, took, slept, tc.wantSleep)
				}
				if tc.wantSleep && took > time.Minute+31*time.Second {
					t.Errorf("put to sleep after %v, want the grace period (+ one pass)", took)
				}
			})
		})
	}
}

// /robots.txt for a sleeping app wakes it to answer (held, then sent), and the
// woken app goes back to sleep a grace period later: the request counted for
// nothing.
func TestNotActivity_WakesASleepingAppToAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		p := e.route(config("app", func(c *Config) { c.GracePeriod = conf.Duration(time.Minute) }))
		e.start()
		defer e.stop()
		settle()
		if st := p.route.a.status(); st != StatusDown {
			t.Fatalf("status = %s, want Down", st)
		}
		r := do(context.Background(), p, apiRequest("GET", "/robots.txt"), false)
		if r.answer != nil || r.err != nil {
			t.Fatalf("robots.txt for a sleeping app: answer %v, err %v; want it held, then sent to the app", r.status(), r.err)
		}
		if p.route.a.status() != StatusUp || e.fake.Count("start", "app") != 1 {
			t.Fatalf("status = %s, starts = %d; want Up after one start", p.route.a.status(), e.fake.Count("start", "app"))
		}
		if rep, _ := e.engine.Awake("app", AwakeKeys); len(rep.Paths) != 0 {
			t.Errorf("robots.txt is counted among the paths that keep the app awake: %v", rep.Paths)
		}
		took := waitStatus(t, p, StatusDown, 5*time.Minute)
		if took > time.Minute+31*time.Second {
			t.Errorf("asleep again %v after the wake, want the grace period (+ one pass)", took)
		}
	})
}

// not_activity: [] in the file turns the defaults off; an absent key keeps them.
func TestNotActivity_EmptyListInTheFileTurnsTheDefaultsOff(t *testing.T) {
	for src, want := range map[string]int{"{app_id: a}": len(DefaultNotActivity), "{app_id: a, not_activity: []}": 0,
		"{app_id: a, not_activity: [/ads.txt]}": 1} {
		n, err := conf.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		var errs conf.Errors
		d := conf.Decoder{Env: func(string) (string, bool) { return "", false }}
		d.Decode(n, &c, "config", &errs)
		c.Validate("config", &errs)
		if err := errs.Err(); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(c.NotActivity) != want || len(c.notActivity) != want {
			t.Errorf("%s: not_activity = %v, want %d entries", src, c.NotActivity, want)
		}
	}
}

package reaper

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

// holdMany sends n requests for p's sleeping app, one every gap, and returns what
// each got, once all were answered; between the sends and the answers, then runs.
func holdMany(p *Plugin, n int, gap time.Duration, then func()) []result {
	got := make(chan result, n)
	for i := range n {
		if i > 0 {
			time.Sleep(gap)
		}
		go func() { got <- do(context.Background(), p, apiRequest("GET", "/"), false) }()
	}
	settle()
	if then != nil {
		then()
	}
	out := make([]result, n)
	for i := range out {
		out[i] = <-got
	}
	return out
}

// sameAnswers checks that every request got want, with one body.
func sameAnswers(t *testing.T, rs []result, want int) {
	t.Helper()
	for i, r := range rs {
		if r.status() != want || string(r.answer.Body) != string(rs[0].answer.Body) {
			var body string
			if r.answer != nil {
				body = string(r.answer.Body)
			}
			t.Fatalf("request %d got %d %s; request 0 got %d %s; want them all %d with one body",
				i, r.status(), body, rs[0].status(), rs[0].answer.Body, want)
		}
	}
}

// A wake that ends in Error answers every request held for it the same 503 "the
// application could not be started", with the Error's cause — but not what the
// app printed, which may hold its secrets.
func TestHold_AWakeThatEndsInErrorGivesEveryHeldRequestTheSame503WithItsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		rs := holdMany(p, 20, time.Second, func() {
			// The app's process exits before it is ready, as the process
			// driver reports it.
			fake.Set("app", paastest.App{State: paas.StateShouldBeDown, Deployment: &paas.Deployment{
				State: paas.DeploymentFail, Action: "DEPLOY", At: time.Now(),
				Cause: "exited with status 3 before it was ready; last output:\nconnecting to postgres://shop:s3cret@db/shop\nEADDRINUSE",
			}})
		})
		sameAnswers(t, rs, 503)
		m := rs[0].json(t)
		if m["error"] != "the application could not be started" || m["status"] != "Error" ||
			m["cause"] != "the start failed: exited with status 3 before it was ready" {
			t.Errorf("body = %v", m)
		}
		if strings.Contains(string(rs[0].answer.Body), "s3cret") {
			t.Errorf("the app's output reached its clients: %s", rs[0].answer.Body)
		}
	})
}

// A wake that takes longer than the fail timeout answers every request held for
// it at once, with the same 504, when the first of them reaches its fail timeout:
// not some the 504 and the others, a moment later, the 503 of the Error the job
// puts the app in.
func TestHold_AWakeThatTimesOutGivesEveryHeldRequestTheSameAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true // never comes up
		e := newEnv(t, fake, "")
		p := e.route(config("app", func(c *Config) { c.FailTimeout = conf.Duration(20 * time.Second) }))
		e.start()
		defer e.stop()
		settle()
		time.Sleep(500 * time.Millisecond) // between the job's ticks
		begin := time.Now()
		rs := holdMany(p, 10, time.Second, nil)
		if took := time.Since(begin); took != 20*time.Second {
			t.Errorf("answered %v after the first request, want its fail timeout", took)
		}
		sameAnswers(t, rs, 504)
		if m := rs[0].json(t); m["error"] != "the application did not wake up in time" || m["status"] != "WaitingForUp" {
			t.Errorf("body = %v", m)
		}
	})
}

// Requests held under a longer fail timeout (another route on the app, which
// allows a slower boot) go on waiting when those of a shorter one time out.
func TestHold_ALongerFailTimeoutGoesOnWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		e := newEnv(t, fake, "")
		short := e.route(config("app", func(c *Config) { c.FailTimeout = conf.Duration(10 * time.Second) }))
		long := e.routeAs("web", config("app", func(c *Config) { c.FailTimeout = conf.Duration(time.Minute) }))
		e.start()
		defer e.stop()
		settle()
		got := make(chan result, 1)
		go func() { got <- do(context.Background(), long, apiRequest("GET", "/"), false) }()
		rs := holdMany(short, 3, time.Second, nil)
		sameAnswers(t, rs, 504)
		settle()
		select {
		case r := <-got:
			t.Fatalf("the request held under a minute got %d after %d s", r.status(), 10)
		default:
		}
		fake.FinishStart("app")
		if r := <-got; r.answer != nil {
			t.Errorf("got %d, want to be let through once the app is up", r.status())
		}
	})
}

// routeAs provisions a reaper plugin on a route of the given id (e.route names
// the route after its app: one route per app).
func (e *env) routeAs(id string, cfg Config) *Plugin {
	e.t.Helper()
	p := &Plugin{Config: cfg}
	err := p.Provision(plugin.ProvisionContext{
		Context:  context.Background(),
		Logger:   slog.New(slog.DiscardHandler),
		Route:    &plugin.RouteConfig{ID: id, Name: id},
		Path:     "routes[1].plugins[0].config",
		Services: map[string]any{ServiceName: e.engine},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// An app in Error whose backend refuses connections is not running: its
// requests get the 503 "could not be started" with the cause (a browser, the
// waiting page that says so), at once — not a 502 from its dead backend after
// waiting for a verdict the job does not give an app in Error.
func TestError_AnAppInErrorThatRefusesConnectionsAnswers503(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every connection is refused
	rig := &holdRig{}
	rig.start(t, true, "{app_id: app, ready_delay: 0}", "http://"+addr)
	rig.fake.FailNext("start", paas.ErrStartFailed)
	get := func(accept string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", rig.front.URL+"/", nil)
		req.Header.Set("Accept", accept)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b)
	}
	// The wake fails: the held request gets the 503.
	if res, body := get("application/json"); res.StatusCode != 503 {
		t.Fatalf("held: %d %s", res.StatusCode, body)
	}
	if st := rig.app.status(); st != StatusError {
		t.Fatalf("status %s, want Error", st)
	}
	// In Error the requests go to the app, which refuses them.
	res, body := get("application/json")
	if res.StatusCode != 503 || res.Header.Get(HeaderStatus) != "Error" ||
		!strings.Contains(body, `"error":"the application could not be started"`) ||
		!strings.Contains(body, `"cause":"the start failed: paas: app could not be started"`) {
		t.Errorf("API request in Error: %d %v %s", res.StatusCode, res.Header, body)
	}
	res, body = get("text/html")
	if res.StatusCode != 503 || res.Header.Get(HeaderStatus) != "Error" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, "could not be started") {
		t.Errorf("page load in Error: %d %v %.200s", res.StatusCode, res.Header, body)
	}
}

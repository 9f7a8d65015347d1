package reaper

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

func TestApplyHint(t *testing.T) {
	routes := Policy{GracePeriod: time.Hour, FailTimeout: 2 * time.Minute, MustBeUp: []Range{{}}, Prewake: true}
	label := "label reaper.grace_period of container web-1"
	bad := errors.New(`container web-1: label reaper.grace_period: "soon" is not a duration`)
	for _, tc := range []struct {
		name          string
		hint          paas.PolicyHint
		err           error
		grace         time.Duration
		from, problem string
	}{
		{"no hint: the routes'", paas.PolicyHint{}, nil, time.Hour, "", ""},
		{"a shorter label wins", paas.PolicyHint{GracePeriod: 2 * time.Second, From: label}, nil, 2 * time.Second, label, ""},
		{"a longer label wins too", paas.PolicyHint{GracePeriod: 3 * time.Hour, From: label}, nil, 3 * time.Hour, label, ""},
		{"an unreadable label: the routes', and why", paas.PolicyHint{}, bad, time.Hour, "", bad.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, from, problem := applyHint(routes, tc.hint, tc.err)
			if p.GracePeriod != tc.grace || from != tc.from || problem != tc.problem {
				t.Errorf("got %s, %q, %q; want %s, %q, %q", p.GracePeriod, from, problem, tc.grace, tc.from, tc.problem)
			}
			if p.FailTimeout != routes.FailTimeout || len(p.MustBeUp) != 1 || !p.Prewake {
				t.Errorf("the rest of the policy changed: %+v", p)
			}
		})
	}
}

// The app's own grace period is the one the job sleeps it on, the one the admin
// API shows (with reap_at), and a change of it is seen on the next pass.
func TestReaper_TheAppsOwnGracePeriodWinsOverItsRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.SetHint("app", paas.PolicyHint{GracePeriod: 2 * time.Minute, From: "label reaper.grace_period of container app-1"}, nil)
		e := newEnv(t, fake, "")
		e.engine.opts.Policies = fake
		p := e.route(config("app")) // grace_period: 15m
		e.start()
		defer e.stop()
		settle()
		if r := do(t.Context(), p, apiRequest("GET", "/"), false); r.err != nil || r.answer != nil {
			t.Fatalf("wake: %v / %v", r.answer, r.err)
		}
		upAt := time.Now()
		time.Sleep(10 * time.Second) // the traffic flushed: no longer in flight
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		_, v, _ := call(t, h, "GET", "/api/apps/app", "")
		if v["grace_period"] != "2m0s" || v["grace_period_from"] != "label reaper.grace_period of container app-1" {
			t.Errorf("admin view: grace %v from %v, want the label's 2m0s", v["grace_period"], v["grace_period_from"])
		}
		if at, _ := time.Parse(time.RFC3339Nano, v["reap_at"].(string)); at.Sub(upAt) > 2*time.Minute+time.Second {
			t.Errorf("reap_at %s, %s after the wake: want about 2m", at, at.Sub(upAt))
		}
		time.Sleep(3 * time.Minute) // synctest: simulated
		settle()
		if st := p.route.a.status(); st != StatusDown || fake.Count("stop", "app") != 1 {
			t.Fatalf("3m after the wake: %s, %d stops; want Down after the label's 2m", st, fake.Count("stop", "app"))
		}

		// Recreated with a label that cannot be read: the route's 15m, and why.
		fake.SetHint("app", paas.PolicyHint{}, errors.New(`label reaper.grace_period: "soon" is not a duration`))
		if r := do(t.Context(), p, apiRequest("GET", "/"), false); r.err != nil || r.answer != nil {
			t.Fatalf("second wake: %v / %v", r.answer, r.err)
		}
		_, v, _ = call(t, h, "GET", "/api/apps/app", "")
		if v["grace_period"] != "15m0s" || v["grace_period_from"] != nil || !strings.Contains(v["policy_error"].(string), `"soon"`) {
			t.Errorf("admin view: grace %v from %v, error %v; want the route's 15m0s and the label's problem", v["grace_period"], v["grace_period_from"], v["policy_error"])
		}
		time.Sleep(5 * time.Minute)
		settle()
		if st := p.route.a.status(); st != StatusUp {
			t.Errorf("5m after the second wake: %s, want Up (the route's 15m)", st)
		}
	})
}

// A dependency the driver reports (a container's reaper.depends_on label),
// with no route of its own: managed by the engine, started before web, kept
// up while web is, and put to sleep after web, on web's grace period.
func TestJob_DependsOnFromTheDriversHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("web", "db")
		fake.SetHint("web", paas.PolicyHint{DependsOn: []string{"db"}}, nil)
		e := newEnv(t, fake, "")
		e.engine.opts.Policies = fake
		e.route(config("web", func(c *Config) { c.GracePeriod = conf.Duration(5 * time.Minute) }))
		e.start()
		defer e.stop()
		settle()
		var db *ManagedApp
		for _, m := range e.engine.Managed() {
			if m.App.ID == "db" {
				db = &m
			}
		}
		if db == nil || db.Policy.GracePeriod != 5*time.Minute {
			t.Fatalf("db managed as %+v, want managed with web's grace period", db)
		}
		if r, ok := e.engine.Record("db"); !ok || r.Status != StatusDown {
			t.Fatalf("db: %v %s, want its record known, Down", ok, r.Status)
		}
		e.engine.asks.askNow(e.engine.app("web"), time.Now())
		settle()
		time.Sleep(6 * time.Second)
		settle()
		if calls := startsAndStops(fake); !slices.Equal(calls, []string{"start db", "start web"}) {
			t.Fatalf("calls %v, want db started, then web", calls)
		}
		for range 24 { // 2 min past web's grace: both asleep, web first
			time.Sleep(15 * time.Second)
			settle()
		}
		if calls := startsAndStops(fake); !slices.Equal(calls, []string{"start db", "start web", "stop web", "stop db"}) {
			t.Errorf("calls %v, want web stopped, then db", calls)
		}
	})
}

// An app's own busy_url (its driver's entry or label) applies when no route of
// it sets one, with its busy_max or the default; a route's busy_url wins, with
// its own busy_max.
func TestApplyHint_BusyURL(t *testing.T) {
	const routeURL, appURL = "http://127.0.0.1:3001/busy", "http://127.0.0.1:4001/busy"
	for _, tc := range []struct {
		name    string
		routes  Policy
		hint    paas.PolicyHint
		url     string
		busyMax time.Duration
	}{
		{"none", Policy{BusyMax: DefaultBusyMax}, paas.PolicyHint{}, "", DefaultBusyMax},
		{"the route's alone", Policy{BusyURL: routeURL, BusyMax: 2 * time.Hour}, paas.PolicyHint{}, routeURL, 2 * time.Hour},
		{"the route's wins over the app's", Policy{BusyURL: routeURL, BusyMax: 2 * time.Hour},
			paas.PolicyHint{BusyURL: appURL, BusyMax: time.Minute}, routeURL, 2 * time.Hour},
		{"the app's when the routes set none", Policy{BusyMax: DefaultBusyMax},
			paas.PolicyHint{BusyURL: appURL, BusyMax: time.Minute}, appURL, time.Minute},
		{"a route-less member: the app's, default busy_max", Policy{},
			paas.PolicyHint{BusyURL: appURL}, appURL, DefaultBusyMax},
		{"a busy_max without a busy_url changes nothing", Policy{BusyMax: DefaultBusyMax},
			paas.PolicyHint{BusyMax: time.Minute}, "", DefaultBusyMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := applyHint(tc.routes, tc.hint, nil)
			if p.BusyURL != tc.url || p.BusyMax != tc.busyMax {
				t.Errorf("busy_url %q, busy_max %s; want %q, %s", p.BusyURL, p.BusyMax, tc.url, tc.busyMax)
			}
		})
	}
}

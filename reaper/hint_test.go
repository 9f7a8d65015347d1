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
			m := applyHint(ManagedApp{Policy: routes}, tc.hint, tc.err)
			p, from, problem := m.Policy, m.GraceFrom, m.PolicyProblem
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
// its own busy_max. Where the one in effect comes from is kept for operators.
func TestApplyHint_BusyURL(t *testing.T) {
	const routeURL, appURL = "http://127.0.0.1:3001/busy", "http://127.0.0.1:4001/busy"
	const label = "label reaper.busy_url of container worker-1"
	for _, tc := range []struct {
		name     string
		routes   Policy
		routeSrc string // the route's BusyFrom, as managed() sets it
		hint     paas.PolicyHint
		url      string
		busyMax  time.Duration
		from     string
	}{
		{"none", Policy{BusyMax: DefaultBusyMax}, "", paas.PolicyHint{}, "", DefaultBusyMax, ""},
		{"the route's alone", Policy{BusyURL: routeURL, BusyMax: 2 * time.Hour}, "route web", paas.PolicyHint{},
			routeURL, 2 * time.Hour, "route web"},
		{"the route's wins over the app's", Policy{BusyURL: routeURL, BusyMax: 2 * time.Hour}, "route web",
			paas.PolicyHint{BusyURL: appURL, BusyMax: time.Minute, BusyFrom: label}, routeURL, 2 * time.Hour, "route web"},
		{"the app's label when the routes set none", Policy{BusyMax: DefaultBusyMax}, "",
			paas.PolicyHint{BusyURL: appURL, BusyMax: time.Minute, BusyFrom: label}, appURL, time.Minute, label},
		{"the app's config entry", Policy{BusyMax: DefaultBusyMax}, "",
			paas.PolicyHint{BusyURL: appURL, BusyFrom: "config paas.apps[].busy_url"}, appURL, DefaultBusyMax, "config paas.apps[].busy_url"},
		{"a driver that does not say where from", Policy{BusyMax: DefaultBusyMax}, "",
			paas.PolicyHint{BusyURL: appURL}, appURL, DefaultBusyMax, "driver hint"},
		{"a route-less member: the app's, default busy_max", Policy{}, "",
			paas.PolicyHint{BusyURL: appURL, BusyFrom: label}, appURL, DefaultBusyMax, label},
		{"a busy_max without a busy_url changes nothing", Policy{BusyMax: DefaultBusyMax}, "",
			paas.PolicyHint{BusyMax: time.Minute, BusyFrom: label}, "", DefaultBusyMax, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := applyHint(ManagedApp{Policy: tc.routes, BusyFrom: tc.routeSrc}, tc.hint, nil)
			if m.Policy.BusyURL != tc.url || m.Policy.BusyMax != tc.busyMax || m.BusyFrom != tc.from {
				t.Errorf("busy_url %q, busy_max %s, from %q; want %q, %s, %q", m.Policy.BusyURL, m.Policy.BusyMax, m.BusyFrom,
					tc.url, tc.busyMax, tc.from)
			}
		})
	}
}

// busyRoute names the route whose busy_url won the merge (the smallest URL),
// the first by id when several routes set the same.
func TestBusyRoute(t *testing.T) {
	const a, b = "http://127.0.0.1:3001/busy", "http://127.0.0.1:3002/busy"
	claims := func(urls ...string) map[*Config]claim {
		m := map[*Config]claim{}
		for i, u := range urls {
			id := string(rune('z' - i)) // z, y, x: map order must not matter
			m[&Config{BusyURL: u}] = claim{routeID: id}
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		claims map[*Config]claim
		url    string
		want   string
	}{
		{"no busy_url", claims("", ""), "", ""},
		{"one route sets it", claims("", a), a, "route y"},
		{"two set the same: the first by id", claims(a, a, ""), a, "route y"},
		{"two differ: the one whose URL won", claims(b, a), a, "route y"},
		{"two differ, the other way", claims(a, b), a, "route z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := busyRoute(tc.claims, tc.url); got != tc.want {
				t.Errorf("busyRoute(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

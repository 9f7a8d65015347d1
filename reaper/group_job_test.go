package reaper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// groupEnv is web (a route, grace 10 min), api (a route, grace 5 min, web
// depends on it) and worker (no route) as the group "shop", every app asleep.
func groupEnv(t *testing.T) (*env, *paastest.Fake) {
	fake := paastest.New("web", "api", "worker")
	e := newEnv(t, fake, "")
	e.route(config("web", func(c *Config) { c.GracePeriod = conf.Duration(10 * time.Minute) }))
	e.route(config("api", func(c *Config) { c.GracePeriod = conf.Duration(5 * time.Minute) }))
	deps := map[string][]string{"web": {"api"}}
	e.engine.SetTopology(Topology{Groups: []Group{{ID: "shop", Apps: []string{"web", "api", "worker"}}},
		DependsOn: func(id string) []string { return deps[id] }})
	return e, fake
}

// startsAndStops lists the fake's start and stop calls, in order, as "start web".
func startsAndStops(fake *paastest.Fake) []string {
	var out []string
	for _, c := range fake.Calls("") {
		if c.Op == "start" || c.Op == "stop" {
			out = append(out, c.Op+" "+c.App)
		}
	}
	return out
}

// A wake ask for one member wakes the group: each member started once, web
// after api is up; traffic on one member keeps them all up past its own
// grace period; then they sleep together, in reverse order, on the longest
// grace period.
func TestJob_GroupWakesAndSleepsTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fake := groupEnv(t)
		e.start()
		defer e.stop()
		settle()
		for _, id := range []string{"web", "api", "worker"} {
			if r, _ := e.engine.Record(id); r.Status != StatusDown {
				t.Fatalf("%s: %s, want Down", id, r.Status)
			}
		}
		e.engine.asks.askNow(e.engine.app("web"), time.Now())
		settle()
		time.Sleep(6 * time.Second) // fast ticks: the fake's starts complete
		settle()
		for _, id := range []string{"web", "api", "worker"} {
			if r, _ := e.engine.Record(id); r.Status != StatusUp {
				t.Fatalf("%s: %s after its group's wake, want Up", id, r.Status)
			}
		}
		calls := startsAndStops(fake)
		for _, id := range []string{"web", "api", "worker"} {
			if n := countOf(calls, "start "+id); n != 1 {
				t.Errorf("%s started %d times, want once (%v)", id, n, calls)
			}
		}
		if slices.Index(calls, "start web") < slices.Index(calls, "start api") {
			t.Errorf("web started before api: %v", calls)
		}

		// Traffic on api every minute for 20 minutes: longer than every grace.
		for range 20 {
			e.engine.app("api").lastAccess.Store(time.Now().UnixNano())
			time.Sleep(time.Minute)
			settle()
		}
		if got := startsAndStops(fake); countOf(got, "stop web")+countOf(got, "stop worker")+countOf(got, "stop api") > 0 {
			t.Fatalf("stopped while api had traffic: %v", got)
		}
		// Idle: not before the longest grace (10 min), then worker, web, api.
		time.Sleep(9 * time.Minute)
		settle()
		if got := startsAndStops(fake); countOf(got, "stop worker") > 0 {
			t.Fatalf("stopped before the group's grace period: %v", got)
		}
		time.Sleep(3 * time.Minute)
		settle()
		for range 10 {
			time.Sleep(5 * time.Second)
			settle()
		}
		got := startsAndStops(fake)
		var stops []string
		for _, c := range got {
			if c[:4] == "stop" {
				stops = append(stops, c[5:])
			}
		}
		if !slices.Equal(stops, []string{"worker", "web", "api"}) {
			t.Errorf("stops %v, want worker, web, api", stops)
		}
	})
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// The admin API takes a group's id: a wake asks each member, a hold holds
// each, a sleep of a held group is refused as a whole; GET /api/groups shows it.
func TestAdminAPI_GroupActions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fake := groupEnv(t)
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		code, body, _ := call(t, h, "POST", "/api/apps/shop/_wake", `{"by": "ops"}`)
		if code != 202 || body["group_id"] != "shop" || len(body["members"].([]any)) != 3 {
			t.Fatalf("wake shop: %d %v", code, body)
		}
		time.Sleep(6 * time.Second)
		settle()
		for _, id := range []string{"web", "api", "worker"} {
			if fake.Get(id).State != paas.StateShouldBeUp {
				t.Errorf("%s not woken by its group's wake", id)
			}
		}
		code, body, _ = call(t, h, "POST", "/api/apps/shop/_hold", `{"duration": "6h", "by": "ops"}`)
		if code != 200 {
			t.Fatalf("hold shop: %d %v", code, body)
		}
		code, body, _ = call(t, h, "POST", "/api/apps/shop/_sleep", ``)
		if code != 409 {
			t.Errorf("sleep of a held group: %d %v, want 409", code, body)
		}
		_, _, list := call(t, h, "GET", "/api/groups", "")
		if len(list) != 1 {
			t.Fatalf("groups: %v", list)
		}
		g := list[0].(map[string]any)
		if g["group_id"] != "shop" || g["status"] != "Up" || g["grace_period"] != "10m0s" {
			t.Errorf("group view: %v", g)
		}
		if code, _, _ := call(t, h, "POST", "/api/apps/nope/_wake", ""); code != 404 {
			t.Errorf("wake of an unknown id: %d", code)
		}
		// WakeFor (the triggers' wake) takes a group's id: nothing to ask of
		// a group awake, an unknown id refused.
		if asked, err := e.engine.WakeFor(context.Background(), "shop", "trigger test"); err != nil || asked {
			t.Errorf("WakeFor(shop) of an awake group = %v, %v; want nothing asked", asked, err)
		}
		if _, err := e.engine.WakeFor(context.Background(), "nope", "trigger test"); err != ErrNotManaged {
			t.Errorf("WakeFor(nope) = %v", err)
		}
	})
}

// A group's keep-up window is every member's, a routeless member's included.
func TestEngine_GroupKeepUpWindowIsEveryMembers(t *testing.T) {
	store, err := NewMemStore(MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := NewEngine(EngineOptions{Node: "n1", Store: store})
	all := Range{Start: 0, End: 1440}
	e.SetTopology(Topology{Groups: []Group{{ID: "shop", Apps: []string{"web", "worker"}, MustBeUp: []Range{all}}}})
	for _, m := range e.Managed() {
		if m.Group != "shop" || len(m.Policy.MustBeUp) != 1 || m.Policy.GracePeriod != DefaultGracePeriod {
			t.Errorf("%s: group %q, policy %+v", m.App.ID, m.Group, m.Policy)
		}
	}
	if n := len(e.Managed()); n != 2 {
		t.Errorf("%d managed apps, want the 2 members", n)
	}
}

// Without a group, depends_on alone: a wake of web starts api first; api is
// not put to sleep while web is up, and comes back when it crashes.
func TestJob_DependsOnWithoutAGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("web", "api")
		e := newEnv(t, fake, "")
		e.route(config("web", func(c *Config) { c.GracePeriod = conf.Duration(30 * time.Minute) }))
		e.route(config("api", func(c *Config) { c.GracePeriod = conf.Duration(time.Minute) }))
		e.engine.SetTopology(Topology{DependsOn: func(id string) []string {
			if id == "web" {
				return []string{"api"}
			}
			return nil
		}})
		e.start()
		defer e.stop()
		settle()
		e.engine.asks.askNow(e.engine.app("web"), time.Now())
		settle()
		time.Sleep(6 * time.Second)
		settle()
		calls := startsAndStops(fake)
		if !slices.Equal(calls, []string{"start api", "start web"}) {
			t.Fatalf("calls %v, want api started, then web", calls)
		}
		// api's own grace (1 min) passes: web, up, needs it.
		time.Sleep(10 * time.Minute)
		settle()
		if n := countOf(startsAndStops(fake), "stop api"); n != 0 {
			t.Fatalf("api stopped while web, which depends on it, is up")
		}
		// api crashes: web needs it, it is woken.
		fake.Set("api", paastest.App{State: paas.StateShouldBeDown})
		for range 4 {
			time.Sleep(5 * time.Second)
			settle()
		}
		if n := countOf(startsAndStops(fake), "start api"); n != 2 {
			t.Errorf("api started %d times, want it woken again after its crash (%v)", n, startsAndStops(fake))
		}
		if r, _ := e.engine.Record("api"); r.Status != StatusUp {
			t.Errorf("api: %s, want Up again", r.Status)
		}
	})
}

// A route-less worker of a group gets its busy_url from its driver
// (paas.PolicyHint): while it answers 200 the group stays up past its grace
// period, none of its members stopped; once it answers 204 the group sleeps.
// Real clock, as the other busy_url tests: the probe is a real HTTP GET.
func TestJob_RouteLessMemberWithHintedBusyURLKeepsItsGroupUp(t *testing.T) {
	var status, asked atomic.Int32
	status.Store(http.StatusOK)
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	defer worker.Close()

	fake := upApp("web", "worker")
	fake.SetHint("worker", paas.PolicyHint{BusyURL: worker.URL + "/busy"}, nil)
	e := realEnv(t, fake, 0)
	e.engine.opts.Policies = fake
	p := e.route(config("web", func(c *Config) { c.GracePeriod = conf.Duration(200 * time.Millisecond) }))
	e.engine.SetTopology(Topology{Groups: []Group{{ID: "jobs", Apps: []string{"web", "worker"}}}})
	e.start()
	defer e.stop()
	defer func() {
		if t.Failed() {
			t.Logf("busy_url asked %d times; calls %v; logs:\n%s", asked.Load(), startsAndStops(fake), e.logs.String())
		}
	}()
	testwait.For(t, 30*time.Second, "web seen up", func() bool { return p.route.a.status() == StatusUp })

	// Idle since the start, the worker busy: asked again and again, no member stopped.
	testwait.For(t, 30*time.Second, "the worker's busy_url asked 5 times", func() bool {
		if stops := countOf(startsAndStops(fake), "stop web") + countOf(startsAndStops(fake), "stop worker"); stops != 0 {
			t.Fatalf("a member stopped while the worker's busy_url answers 200: %v", startsAndStops(fake))
		}
		return asked.Load() >= 5
	})
	if rec, _ := e.engine.Record("worker"); rec.Status != StatusUp || rec.Busy == nil {
		t.Fatalf("worker: %s, busy %+v; want Up and busy", rec.Status, rec.Busy)
	}

	status.Store(http.StatusNoContent)
	testwait.For(t, 30*time.Second, "the group asleep once the worker answers 204", func() bool {
		w, _ := e.engine.Record("worker")
		return w.Status == StatusDown && p.route.a.status() == StatusDown
	})
	var stops []string
	for _, c := range startsAndStops(fake) {
		if strings.HasPrefix(c, "stop ") {
			stops = append(stops, c[5:])
		}
	}
	if !slices.Equal(stops, []string{"worker", "web"}) {
		t.Errorf("stops %v, want worker then web", stops)
	}
}

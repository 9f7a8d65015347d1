package reaper

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// countingHints counts the driver's AppPolicy calls.
type countingHints struct {
	paas.PolicyHinter
	calls atomic.Int64
}

func (c *countingHints) AppPolicy(pa paas.App) (paas.PolicyHint, error) {
	c.calls.Add(1)
	return c.PolicyHinter.AppPolicy(pa)
}

// A pass over many apps asks the driver for each app's hint a few times, not
// once per app per app: each step's dependents come from an
// index the pass builds once. 200 apps that all depend on app-000 (through
// their hints), ten of them in a group: scanning every app's depends_on for
// each app's dependents would be 40 000 calls.
func TestJob_APassAsksEachAppsHintOnce(t *testing.T) {
	const n = 200
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("app-%03d", i)
	}
	fake := paastest.New(ids...)
	for _, id := range ids[1:] {
		fake.SetHint(id, paas.PolicyHint{DependsOn: []string{"app-000"}}, nil)
	}
	hints := &countingHints{PolicyHinter: fake}
	e := newEnv(t, fake, "")
	e.engine.opts.Policies = hints
	for _, id := range ids {
		e.route(config(id))
	}
	e.engine.SetTopology(Topology{Groups: []Group{{ID: "ten", Apps: ids[100:110]}}})
	hints.calls.Store(0)

	var wg sync.WaitGroup
	e.job.pass(context.Background(), &wg, 0, true)
	wg.Wait()

	if got := len(e.job.depIndex().dependents["app-000"]); got != n-1 {
		t.Fatalf("the pass's index has %d dependents of app-000, want %d", got, n-1)
	}
	for _, id := range ids {
		if r, ok := e.engine.Record(id); !ok || r.Status != StatusDown {
			t.Fatalf("%s after the pass: %v %s, want decided (Down)", id, ok, r.Status)
		}
	}
	// The targets ask once per app; the flush before the pass's reads asks
	// once per app too (which apps the node keeps: sweep).
	if got := hints.calls.Load(); got > 3*n {
		t.Errorf("one pass over %d apps asked the driver's hint %d times, want at most %d (a few times per app)", n, got, 3*n)
	}
}

// DependencyCycles keeps the depends_on of every app on no cycle, and drops
// all of the depends_on of each app on one.
func TestDependencyCycles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deps    map[string][]string
		kept    map[string][]string
		cycles  []string
		onCycle map[string]string
	}{
		{name: "none", deps: map[string][]string{"web": {"api"}, "api": {"db"}},
			kept: map[string][]string{"web": {"api"}, "api": {"db"}}},
		{name: "two apps", deps: map[string][]string{"a": {"b"}, "b": {"a"}},
			kept: map[string][]string{}, cycles: []string{"a → b → a"},
			onCycle: map[string]string{"a": "a → b → a", "b": "a → b → a"}},
		{name: "an app that needs one on a cycle keeps its own", deps: map[string][]string{
			"web": {"api"}, "api": {"db", "cache"}, "db": {"api"}},
			kept: map[string][]string{"web": {"api"}}, cycles: []string{"api → db → api"},
			onCycle: map[string]string{"api": "api → db → api", "db": "api → db → api"}},
		{name: "three apps", deps: map[string][]string{"c": {"a"}, "a": {"b"}, "b": {"c"}, "d": {"c"}},
			kept: map[string][]string{"d": {"c"}}, cycles: []string{"a → b → c → a"},
			onCycle: map[string]string{"a": "a → b → c → a", "b": "a → b → c → a", "c": "a → b → c → a"}},
		{name: "two cycles", deps: map[string][]string{"a": {"b"}, "b": {"a"}, "x": {"y"}, "y": {"x"}, "z": {"x"}},
			kept: map[string][]string{"z": {"x"}}, cycles: []string{"a → b → a", "x → y → x"},
			onCycle: map[string]string{"a": "a → b → a", "b": "a → b → a", "x": "x → y → x", "y": "x → y → x"}},
		{name: "an app on itself", deps: map[string][]string{"a": {"a"}, "b": {"a"}},
			kept: map[string][]string{"b": {"a"}}, cycles: []string{"a → a"}, onCycle: map[string]string{"a": "a → a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, cycles, onCycle := DependencyCycles(tc.deps)
			if !maps.EqualFunc(kept, tc.kept, slices.Equal) {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
			if !slices.Equal(cycles, tc.cycles) {
				t.Errorf("cycles %q, want %q", cycles, tc.cycles)
			}
			if !maps.Equal(onCycle, tc.onCycle) && len(onCycle)+len(tc.onCycle) > 0 {
				t.Errorf("onCycle %q, want %q", onCycle, tc.onCycle)
			}
		})
	}
}

// A depends_on cycle that the apps' own labels make (api → db → api, db and
// api managed as web's dependencies) is refused: api and db depend on
// nothing, so web's wake starts api, then web, and never waits on db; each
// says why in the admin view, and the log says it once. web's own depends_on
// (on api, on no cycle) is honoured. Once the labels drop the cycle, api
// depends on db again.
func TestJob_ADependsOnCycleFromLabelsIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("web", "api", "db")
		fake.SetHint("web", paas.PolicyHint{DependsOn: []string{"api"}}, nil)
		fake.SetHint("api", paas.PolicyHint{DependsOn: []string{"db"}}, nil)
		fake.SetHint("db", paas.PolicyHint{DependsOn: []string{"api"}}, nil)
		e := newEnv(t, fake, "")
		e.engine.opts.Policies = fake
		e.route(config("web"))
		e.start()
		defer e.stop()
		settle()
		idleFor(time.Minute) // a few passes: the cycle is logged once
		const cycle = "api → db → api"
		if n := e.logs.Lines("depends_on makes a cycle", cycle); n != 1 {
			t.Errorf("the cycle logged %d times, want once:\n%s", n, e.logs)
		}
		problems := map[string]string{}
		for _, m := range e.engine.Managed() {
			problems[m.App.ID] = m.DependsOnProblem
		}
		if !strings.Contains(problems["api"], cycle) || !strings.Contains(problems["db"], cycle) || problems["web"] != "" {
			t.Errorf("problems %q, want api's and db's to name %q, none for web", problems, cycle)
		}
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		if _, v, _ := call(t, h, "GET", "/api/apps/db", ""); !strings.Contains(fmt.Sprint(v["depends_on_error"]), cycle) {
			t.Errorf("db's admin view: depends_on_error %v, want the cycle %q", v["depends_on_error"], cycle)
		}
		if _, v, _ := call(t, h, "GET", "/api/apps/web", ""); fmt.Sprint(v["depends_on"]) != "[api]" || v["depends_on_error"] != nil {
			t.Errorf("web's admin view: depends_on %v (error %v), want [api] and no error", v["depends_on"], v["depends_on_error"])
		}
		if _, v, _ := call(t, h, "GET", "/api/apps/db", ""); v["depends_on"] != nil {
			t.Errorf("db's admin view: depends_on %v, want none (its cycle is refused)", v["depends_on"])
		}

		e.engine.asks.askNow(e.engine.app("web"), time.Now())
		idleFor(time.Minute)
		if calls := startsAndStops(fake); !slices.Equal(calls, []string{"start api", "start web"}) {
			t.Errorf("calls %v, want api started, then web, and db left asleep", calls)
		}

		fake.SetHint("db", paas.PolicyHint{}, nil) // the container recreated without its label
		idleFor(time.Minute)
		if n := e.logs.Lines("depends_on makes no cycle any more"); n != 1 {
			t.Errorf("the cycle's end logged %d times, want once", n)
		}
		if d := e.engine.DependsOn("api"); !slices.Equal(d, []string{"db"}) {
			t.Errorf("api depends on %v once the cycle is gone, want [db]", d)
		}
	})
}

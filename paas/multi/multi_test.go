package multi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// full is a driver with every optional interface the fake has (a Watcher, a
// DeploymentReader, a Meter, a PolicyHinter), a Pricer, and the apps it was
// made with.
type full struct {
	*paastest.Fake
	ids []string
}

func (d full) Owns(id string) bool { return slices.Contains(d.ids, id) }

func (d full) Cost(_ context.Context, app paas.App) (paas.Cost, error) {
	return paas.Cost{PerHour: 0.5, Currency: "EUR", MemoryBytes: int64(len(app.ID))}, nil
}

// plain is a driver with none of the optional interfaces.
type plain struct {
	f   *paastest.Fake
	ids []string
}

func (d plain) Owns(id string) bool { return slices.Contains(d.ids, id) }
func (d plain) Observe(ctx context.Context, a paas.App) (paas.Observation, error) {
	return d.f.Observe(ctx, a)
}
func (d plain) Start(ctx context.Context, a paas.App) error { return d.f.Start(ctx, a) }
func (d plain) Stop(ctx context.Context, a paas.App) error  { return d.f.Stop(ctx, a) }

// batch owns the ids of the form app_… and observes them together.
type batch struct {
	*paastest.Fake
	mu    *sync.Mutex
	asked *[][]string
	fail  error
}

func (d batch) Owns(id string) bool { return strings.HasPrefix(id, "app_") }
func (d batch) ObserveAll(ctx context.Context, apps []paas.App) (map[paas.App]paas.Observation, error) {
	ids := make([]string, len(apps))
	for i, a := range apps {
		ids[i] = a.ID
	}
	d.mu.Lock()
	*d.asked = append(*d.asked, ids)
	d.mu.Unlock()
	if d.fail != nil {
		return nil, d.fail
	}
	out := map[paas.App]paas.Observation{}
	for _, a := range apps {
		if obs, err := d.Fake.Observe(ctx, a); err == nil {
			out[a] = obs
		}
	}
	return out, nil
}

func newBatch(fail error, ids ...string) batch {
	return batch{Fake: paastest.New(ids...), mu: &sync.Mutex{}, asked: new([][]string), fail: fail}
}

func TestClient_RoutesEachCallToTheOwner(t *testing.T) {
	proc := full{paastest.New("demo"), []string{"demo"}}
	dock := plain{paastest.New("web"), []string{"web"}}
	cc := newBatch(nil, "app_1")
	c := New(nil, Driver{"process", proc}, Driver{"docker", dock}, Driver{"clevercloud", cc})
	ctx := context.Background()
	cases := []struct {
		id    string
		fake  *paastest.Fake
		found bool
	}{
		{"demo", proc.Fake, true},
		{"web", dock.f, true},
		{"app_1", cc.Fake, true},
		{"ghost", nil, false},
	}
	for _, tc := range cases {
		app := paas.App{ID: tc.id}
		errStart, errStop := c.Start(ctx, app), c.Stop(ctx, app)
		_, errObs := c.Observe(ctx, app)
		if !tc.found {
			for _, err := range []error{errStart, errStop, errObs} {
				if !errors.Is(err, paas.ErrNotFound) || !strings.Contains(err.Error(), "process, docker, clevercloud") {
					t.Errorf("%s: err = %v, want ErrNotFound naming the drivers", tc.id, err)
				}
			}
			if c.Owns(tc.id) {
				t.Errorf("%s: owned", tc.id)
			}
			continue
		}
		if errStart != nil || errStop != nil || errObs != nil {
			t.Fatalf("%s: %v, %v, %v", tc.id, errStart, errStop, errObs)
		}
		for _, op := range []string{"start", "stop", "observe"} {
			if n := tc.fake.Count(op, tc.id); n != 1 {
				t.Errorf("%s: %d %s calls to its driver, want 1", tc.id, n, op)
			}
		}
	}
	for _, f := range []*paastest.Fake{proc.Fake, dock.f, cc.Fake} {
		if n := len(f.Calls("start")); n != 1 {
			t.Errorf("a driver got %d starts, want 1 (its own app's)", n)
		}
	}
}

func TestClient_TheFirstListedOfTwoClaimsWinsAndIsLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	proc := full{paastest.New("web"), []string{"web"}}
	dock := plain{paastest.New("web"), []string{"web"}}
	c := New(log, Driver{"process", proc}, Driver{"docker", dock})
	for range 3 {
		if err := c.Start(context.Background(), paas.App{ID: "web"}); err != nil {
			t.Fatal(err)
		}
	}
	if p, d := proc.Count("start", "web"), dock.f.Count("start", "web"); p != 3 || d != 0 {
		t.Errorf("starts: process %d, docker %d; want 3, 0", p, d)
	}
	if n := strings.Count(buf.String(), "two drivers claim the app"); n != 1 || !strings.Contains(buf.String(), "driver=process ignored=docker") {
		t.Errorf("logged %d times, want once:\n%s", n, buf.String())
	}
}

func TestClient_ObserveAllGroupsByDriver(t *testing.T) {
	ctx := context.Background()
	proc := full{paastest.New("demo"), []string{"demo", "gone"}}
	cc := newBatch(nil, "app_1", "app_2")
	c := New(nil, Driver{"process", proc}, Driver{"clevercloud", cc})
	apps := []paas.App{{ID: "demo"}, {ID: "app_1"}, {ID: "gone"}, {ID: "app_2"}, {ID: "ghost"}}
	got, err := c.ObserveAll(ctx, apps)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[paas.App{ID: "demo"}].State != paas.StateShouldBeDown || got[paas.App{ID: "app_2"}].State != paas.StateShouldBeDown {
		t.Errorf("observed %v, want demo, app_1 and app_2 (gone is not found, ghost has no driver)", got)
	}
	if len(*cc.asked) != 1 || !slices.Equal((*cc.asked)[0], []string{"app_1", "app_2"}) {
		t.Errorf("batches asked of clevercloud: %v, want one of app_1, app_2", *cc.asked)
	}
	if n := proc.Count("observe", "demo"); n != 1 {
		t.Errorf("demo observed %d times, want 1", n)
	}

	failing := newBatch(errors.New("summary: 503"), "app_1")
	c = New(nil, Driver{"process", proc}, Driver{"clevercloud", failing})
	got, err = c.ObserveAll(ctx, apps[:2])
	if _, has := got[paas.App{ID: "app_1"}]; err != nil || has || len(got) != 1 {
		t.Errorf("with a failed batch: %v, %v; want demo alone, no error", got, err)
	}
}

func TestClient_OptionalInterfacesDelegateOrFallBack(t *testing.T) {
	ctx := context.Background()
	proc := full{paastest.New("demo"), []string{"demo"}}
	dock := plain{paastest.New("web"), []string{"web"}}
	c := New(nil, Driver{"process", proc}, Driver{"docker", dock})
	dep := &paas.Deployment{State: paas.DeploymentOK, At: time.Unix(100, 0)}
	proc.Set("demo", paastest.App{State: paas.StateShouldBeUp, Deployment: dep})
	dock.f.Set("web", paastest.App{State: paas.StateShouldBeUp, Deployment: dep})
	proc.SetMeasures("demo", paas.Measures{MemoryBytes: 42})
	proc.SetHint("demo", paas.PolicyHint{GracePeriod: time.Minute, From: "label"}, nil)

	if d, err := c.LastDeployment(ctx, paas.App{ID: "demo"}); err != nil || d != dep || proc.Count("deployment", "demo") != 1 {
		t.Errorf("demo's deployment: %v, %v: want the reader's", d, err)
	}
	if d, err := c.LastDeployment(ctx, paas.App{ID: "web"}); err != nil || d == nil || *d != *dep || dock.f.Count("observe", "web") != 1 {
		t.Errorf("web's deployment: %v, %v: want its observation's", d, err)
	}
	if _, err := c.LastDeployment(ctx, paas.App{ID: "ghost"}); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("ghost's deployment: %v", err)
	}
	if m := c.Measured(paas.App{ID: "demo"}); m.MemoryBytes != 42 {
		t.Errorf("demo measured %+v", m)
	}
	if m := c.Measured(paas.App{ID: "web"}); m != (paas.Measures{}) {
		t.Errorf("web measured %+v, want nothing", m)
	}
	if h, err := c.AppPolicy(paas.App{ID: "demo"}); err != nil || h.GracePeriod != time.Minute {
		t.Errorf("demo's hint %+v, %v", h, err)
	}
	if h, err := c.AppPolicy(paas.App{ID: "web"}); err != nil || !reflect.DeepEqual(h, paas.PolicyHint{}) {
		t.Errorf("web's hint %+v, %v", h, err)
	}
	if cost, err := c.Cost(ctx, paas.App{ID: "demo"}); err != nil || cost.PerHour != 0.5 || cost.MemoryBytes != 4 {
		t.Errorf("demo's cost %+v, %v", cost, err)
	}
	if cost, err := c.Cost(ctx, paas.App{ID: "web"}); err != nil || cost != (paas.Cost{}) {
		t.Errorf("web's cost %+v, %v, want unknown", cost, err)
	}
}

func TestClient_WatchesEveryWatcher(t *testing.T) {
	a := full{paastest.New("demo"), []string{"demo"}}
	b := full{paastest.New("web"), []string{"web"}}
	dock := plain{paastest.New("other"), []string{"other"}}
	c := New(nil, Driver{"process", a}, Driver{"docker", b}, Driver{"plain", dock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan string, 4)
	c.Watch(ctx, func(id string) { changed <- id })
	a.Set("demo", paastest.App{State: paas.StateShouldBeUp})
	b.Set("web", paastest.App{State: paas.StateShouldBeUp})
	var got []string
	for range 2 {
		select {
		case id := <-changed:
			got = append(got, id)
		case <-time.After(5 * time.Second):
			t.Fatalf("changes heard: %v, want demo and web", got)
		}
	}
	if slices.Sort(got); !slices.Equal(got, []string{"demo", "web"}) {
		t.Errorf("changes heard: %v", got)
	}
}

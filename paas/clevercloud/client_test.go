package clevercloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestClient_PathsForOrganisationAndUserOwners(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, nil)
	ctx := context.Background()
	ao := e.f.AddApp(fakeclever.App{Owner: orga, Name: "orga app"})
	au := e.f.AddApp(fakeclever.App{Owner: user, Name: "user app", State: fakeclever.StateShouldBeDown})
	for _, c := range []struct {
		app    paas.App
		prefix string
	}{
		{paas.App{ID: ao.ID, Owner: orga}, "/v2/organisations/" + orga + "/applications/" + ao.ID},
		{paas.App{ID: au.ID, Owner: user}, "/v2/self/applications/" + au.ID},
	} {
		e.f.ResetCalls()
		obs, err := e.c.Observe(ctx, c.app)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.LastDeployment(ctx, c.app); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Stop(ctx, c.app); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Start(ctx, c.app); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"GET " + c.prefix,
			"GET " + c.prefix + "/deployments?limit=2",
			"GET " + c.prefix, // Stop reads deployment.shutdownable first
			"DELETE " + c.prefix + "/instances",
			"POST " + c.prefix + "/instances",
		}
		if got := e.calls("/v2/"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: calls\n%s\nwant\n%s", c.app, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if obs.Name == "" || obs.State == "" {
			t.Errorf("%s: observation %+v", c.app, obs)
		}
	}
	for _, c := range e.f.Calls() {
		if c.UserAgent != "reaper/test" || c.Accept != "application/json" {
			t.Fatalf("call %+v: User-Agent %q, Accept %q", c, c.UserAgent, c.Accept)
		}
	}
}

func TestClient_ObserveReadsStateNameAndShutdownable(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, nil)
	a := e.f.AddApp(fakeclever.App{Owner: orga, Name: "keep me", NotShutdownable: true, State: fakeclever.StateModerated})
	obs, err := e.c.Observe(context.Background(), paas.App{ID: a.ID, Owner: orga})
	if err != nil {
		t.Fatal(err)
	}
	if obs != (paas.Observation{State: "MODERATED", Name: "keep me", NotShutdownable: true}) {
		t.Errorf("observation %+v", obs)
	}
	// Stop refuses it, after reading it, and sends no DELETE.
	err = e.c.Stop(context.Background(), paas.App{ID: a.ID, Owner: orga})
	if !errors.Is(err, ErrNotShutdownable) || paas.Retryable(err) {
		t.Errorf("stop: %v", err)
	}
	if got := e.calls("/instances"); len(got) != 0 {
		t.Errorf("calls %v", got)
	}
}

func TestClient_ObserveAllIsOneSummaryCallAndDeduplicates(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, nil)
	var apps []paas.App
	for i := range 500 {
		owner := orga
		if i%5 == 0 {
			owner = user // these appear twice in the summary: under user and among organisations
		}
		state := fakeclever.StateShouldBeUp
		if i%2 == 1 {
			state = fakeclever.StateShouldBeDown
		}
		a := e.f.AddApp(fakeclever.App{Owner: owner, Name: fmt.Sprintf("app %d", i), State: state})
		apps = append(apps, paas.App{ID: a.ID}) // owners unknown: the summary tells
	}
	apps = append(apps, paas.App{ID: "app_00000000-0000-4000-8000-00000000dead"})
	// A Stop-free Observe of one app makes its shutdownable flag known.
	e.f.Console(apps[3].ID).SetShutdownable(false)
	if _, err := e.c.Observe(context.Background(), paas.App{ID: apps[3].ID, Owner: orga}); err != nil {
		t.Fatal(err)
	}
	e.f.ResetCalls()

	got, err := e.c.ObserveAll(context.Background(), apps)
	if err != nil {
		t.Fatal(err)
	}
	if calls := e.calls(""); len(calls) != 1 || calls[0] != "GET /v2/summary" {
		t.Fatalf("calls: %v", calls)
	}
	if len(got) != 500 {
		t.Fatalf("%d observations, want 500 (the unknown app absent)", len(got))
	}
	for i, a := range apps[:500] {
		o := got[a]
		want := paas.StateShouldBeUp
		if i%2 == 1 {
			want = paas.StateShouldBeDown
		}
		if o.State != want || o.Name != fmt.Sprintf("app %d", i) || o.NotShutdownable != (i == 3) || o.Deployment != nil {
			t.Fatalf("app %d: %+v", i, o)
		}
	}
	// The summary taught the driver every owner: a call on a user app goes to /v2/self.
	e.f.ResetCalls()
	if _, err := e.c.Observe(context.Background(), apps[0]); err != nil {
		t.Fatal(err)
	}
	if calls := e.calls(""); len(calls) != 1 || calls[0] != "GET /v2/self/applications/"+apps[0].ID {
		t.Errorf("calls: %v", calls)
	}
}

func TestClient_LastDeployment(t *testing.T) {
	clk := &manualClock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	e := newEnv(t, fakeclever.Options{Now: clk.Now, DeployDelay: 10 * time.Second, BootTime: 30 * time.Second}, nil)
	a := e.f.AddApp(fakeclever.App{Owner: orga, State: fakeclever.StateShouldBeDown})
	never := e.f.AddApp(fakeclever.App{Owner: orga, NeverDeployed: true})
	ctx := context.Background()
	app := paas.App{ID: a.ID, Owner: orga}

	if d, err := e.c.LastDeployment(ctx, paas.App{ID: never.ID, Owner: orga}); d != nil || err != nil {
		t.Errorf("never deployed: %+v, %v; want nil, nil", d, err)
	}
	d, err := e.c.LastDeployment(ctx, app)
	if err != nil || d.State != paas.DeploymentOK || d.Action != "UNDEPLOY" {
		t.Fatalf("stopped app: %+v, %v", d, err)
	}
	e.c.Start(ctx, app)
	e.f.Console(a.ID).FailNextDeployment() // for the next one: this start succeeds
	clk.Add(10 * time.Second)
	d, _ = e.c.LastDeployment(ctx, app)
	if d.State != paas.DeploymentWIP || d.Action != "DEPLOY" || !d.At.Equal(clk.Now()) || !d.State.InProgress() {
		t.Errorf("starting: %+v (now %v)", d, clk.Now())
	}
	clk.Add(30 * time.Second)
	e.c.Stop(ctx, app)
	// Stopped after the start: the stop comes with the start before it.
	d, _ = e.c.LastDeployment(ctx, app)
	if d.Action != "UNDEPLOY" || d.Before == nil || d.Before.Action != "DEPLOY" || d.Before.State != paas.DeploymentOK || !d.Before.At.Before(d.At) {
		t.Errorf("stopped after a start: %+v, before it %+v", d, d.Before)
	}
	e.c.Start(ctx, app)
	clk.Add(40 * time.Second)
	d, _ = e.c.LastDeployment(ctx, app)
	if d.State != paas.DeploymentFail || d.Cause == "" {
		t.Errorf("failed: %+v", d)
	}
}

// manualClock drives the fake's transitions.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// No call takes a body. A start (POST) says so with Content-Length: 0; a GET or
// a DELETE, whose methods expect no body, with no framing header at all (RFC 9110
// §8.6). Never chunked: an empty chunked body leaves its terminator on the
// connection for a server that does not read it, and Go's transport then logs an
// "Unsolicited response" outside the structured log. Checked at the wire, on both
// hosts.
func TestClient_RequestsWithoutABodyAreNotChunked(t *testing.T) {
	for _, host := range []string{"bridge", "api"} {
		t.Run(host, func(t *testing.T) {
			e := newEnv(t, fakeclever.Options{}, func(f *fakeclever.Fake, c *Config, _ *Options) {
				if host == "api" {
					oauthConfig(f, c)
				}
			})
			ctx := context.Background()
			a := e.f.AddApp(fakeclever.App{Owner: orga, State: fakeclever.StateShouldBeDown})
			app := paas.App{ID: a.ID, Owner: orga}
			if err := e.c.Start(ctx, app); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.Observe(ctx, app); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.LastDeployment(ctx, app); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.ObserveAll(ctx, []paas.App{app}); err != nil {
				t.Fatal(err)
			}
			if err := e.c.Stop(ctx, app); err != nil {
				t.Fatal(err)
			}
			methods := map[string]bool{}
			for _, c := range e.f.Calls() {
				methods[c.Method] = true
				wantLength := []string(nil)
				if c.Method == http.MethodPost {
					wantLength = []string{"0"}
				}
				if len(c.TransferEncoding) != 0 || c.ContentLength != 0 || c.BodyBytes != 0 ||
					!slices.Equal(c.ContentLengthHeader, wantLength) {
					t.Errorf("%s %s: transfer-encoding %q, length %d, Content-Length lines %q, %d body bytes; want no body, Content-Length lines %q",
						c.Method, c.Path, c.TransferEncoding, c.ContentLength, c.ContentLengthHeader, c.BodyBytes, wantLength)
				}
			}
			if !methods["GET"] || !methods["POST"] || !methods["DELETE"] {
				t.Errorf("methods seen: %v", methods)
			}
		})
	}
}

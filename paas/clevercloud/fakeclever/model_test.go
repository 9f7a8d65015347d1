package fakeclever

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

const (
	testApp   = "app_11111111-2222-4333-8444-555555555555"
	testOrga  = "orga_aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	deployDel = 10 * time.Second
	bootTime  = 40 * time.Second
	linger    = 20 * time.Second
)

// seen is what the API shows of the app at one moment.
type seen struct {
	state     string
	depState  string // of the newest deployment, "" when none
	depAction string
	depNum    int
	instances string // instance states joined by ","
	edge      int    // status of the app's domain
}

func observe(t *testing.T, f *Fake, id string) seen {
	t.Helper()
	base := f.BridgeURL() + "/v2/organisations/" + testOrga + "/applications/" + id
	var app struct{ State string }
	call(t, "GET", base, bearer(f)).json(t, &app)
	var deps []struct {
		ID     int
		State  string
		Action string
	}
	call(t, "GET", base+"/deployments?limit=1", bearer(f)).json(t, &deps)
	var inst []struct{ State string }
	call(t, "GET", base+"/instances", bearer(f)).json(t, &inst)
	s := seen{state: app.State}
	if len(deps) > 0 {
		s.depState, s.depAction, s.depNum = deps[0].State, deps[0].Action, deps[0].ID
	}
	var states []string
	for _, i := range inst {
		states = append(states, i.State)
	}
	s.instances = strings.Join(states, ",")
	s.edge = call(t, "GET", f.EdgeURL()+"/", "", "Host", DefaultDomain(id)).status
	return s
}

func post(t *testing.T, f *Fake, method, id string) answer {
	t.Helper()
	return call(t, method, f.BridgeURL()+"/v2/organisations/"+testOrga+"/applications/"+id+"/instances", bearer(f))
}

func TestTransitions_StartStopOverTime(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{DeployDelay: deployDel, BootTime: bootTime, StopLinger: linger, Now: clk.Now})
	f.AddApp(App{ID: testApp, Owner: testOrga, State: StateShouldBeDown})

	steps := []struct {
		name   string
		action string // "", "start" or "stop"
		status int    // of the action
		after  time.Duration
		want   seen
	}{
		{"down at first", "", 0, 0, seen{StateShouldBeDown, DeploymentOK, ActionUndeploy, 2, "", 404}},
		{"start accepted", "start", 200, 0, seen{StateShouldBeDown, DeploymentOK, ActionUndeploy, 2, "", 404}},
		{"still SHOULD_BE_DOWN before the deployment begins", "", 0, deployDel - time.Millisecond,
			seen{StateShouldBeDown, DeploymentOK, ActionUndeploy, 2, "", 404}},
		{"a second start is locked", "start", 409, 0, seen{StateShouldBeDown, DeploymentOK, ActionUndeploy, 2, "", 404}},
		{"deployment begins", "", 0, time.Millisecond, seen{StateWantsToBeUp, DeploymentWIP, ActionDeploy, 3, "BOOTING", 404}},
		{"a stop is locked too", "stop", 409, 0, seen{StateWantsToBeUp, DeploymentWIP, ActionDeploy, 3, "BOOTING", 404}},
		{"half way", "", 0, bootTime / 2, seen{StateWantsToBeUp, DeploymentWIP, ActionDeploy, 3, "DEPLOYING", 404}},
		{"up", "", 0, bootTime / 2, seen{StateShouldBeUp, DeploymentOK, ActionDeploy, 3, "UP", 200}},
		{"stop accepted", "stop", 200, 0, seen{StateShouldBeUp, DeploymentWIP, ActionUndeploy, 4, "STOPPING", 200}},
		{"SHOULD_BE_UP lingers", "", 0, linger - time.Millisecond, seen{StateShouldBeUp, DeploymentWIP, ActionUndeploy, 4, "STOPPING", 200}},
		{"down", "", 0, time.Millisecond, seen{StateShouldBeDown, DeploymentOK, ActionUndeploy, 4, "", 404}},
		{"a stop of a stopped app changes nothing", "stop", 200, 0, seen{StateShouldBeDown, DeploymentOK, ActionUndeploy, 4, "", 404}},
	}
	for _, s := range steps {
		clk.Add(s.after)
		switch s.action {
		case "start":
			if a := post(t, f, "POST", testApp); a.status != s.status {
				t.Fatalf("%s: start answered %d %s", s.name, a.status, a.body)
			}
		case "stop":
			if a := post(t, f, "DELETE", testApp); a.status != s.status {
				t.Fatalf("%s: stop answered %d %s", s.name, a.status, a.body)
			}
		}
		if got := observe(t, f, testApp); got != s.want {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
	if f.Starts(testApp) != 1 || f.Restarts(testApp) != 0 {
		t.Errorf("starts %d restarts %d, want 1 and 0", f.Starts(testApp), f.Restarts(testApp))
	}
}

func TestTransitions_FailedAndCancelledStarts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(*Console) error
		outcome string
	}{
		{"fail", (*Console).FailNextDeployment, DeploymentFail},
		{"cancel", (*Console).CancelNextDeployment, DeploymentCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			f := startFake(t, Options{DeployDelay: deployDel, BootTime: bootTime, StopLinger: linger, Now: clk.Now})
			f.AddApp(App{ID: testApp, Owner: testOrga, State: StateShouldBeDown})
			if err := tc.prepare(f.Console(testApp)); err != nil {
				t.Fatal(err)
			}
			post(t, f, "POST", testApp)
			clk.Add(deployDel + bootTime)
			want := seen{StateWantsToBeUp, tc.outcome, ActionDeploy, 3, "", 404}
			if got := observe(t, f, testApp); got != want {
				t.Fatalf("just after: got %+v, want %+v", got, want)
			}
			var deps []struct{ Cause *string }
			call(t, "GET", f.BridgeURL()+"/v2/organisations/"+testOrga+"/applications/"+testApp+"/deployments?limit=1",
				bearer(f)).json(t, &deps)
			if deps[0].Cause == nil || *deps[0].Cause == "" {
				t.Error("a failed deployment has no cause")
			}
			clk.Add(linger)
			want.state = StateShouldBeDown
			if got := observe(t, f, testApp); got != want {
				t.Fatalf("later: got %+v, want %+v", got, want)
			}
			// The next start succeeds: the failure was for one deployment only.
			post(t, f, "POST", testApp)
			clk.Add(deployDel + bootTime)
			if got := observe(t, f, testApp); got.state != StateShouldBeUp || got.depState != DeploymentOK {
				t.Fatalf("after a new start: %+v", got)
			}
		})
	}
}

func TestTransitions_StartOfAnUpAppRestartsItAndIsCounted(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{DeployDelay: deployDel, BootTime: bootTime, StopLinger: linger, Now: clk.Now})
	f.AddApp(App{ID: testApp, Owner: testOrga})
	before, _ := f.App(testApp)
	if a := post(t, f, "POST", testApp); a.status != http.StatusOK || !strings.Contains(string(a.body), "redeploy") {
		t.Fatalf("start answered %d %s", a.status, a.body)
	}
	clk.Add(deployDel)
	// The old instance serves while the new one deploys; the state stays up.
	if got := observe(t, f, testApp); got != (seen{StateShouldBeUp, DeploymentWIP, ActionDeploy, 2, "UP,DEPLOYING", 200}) {
		t.Fatalf("during the restart: %+v", got)
	}
	clk.Add(bootTime)
	after, _ := f.App(testApp)
	if !after.InstanceStartedAt.After(before.InstanceStartedAt) {
		t.Errorf("instance start %v not after %v", after.InstanceStartedAt, before.InstanceStartedAt)
	}
	if f.Starts(testApp) != 1 || f.Restarts(testApp) != 1 {
		t.Errorf("starts %d restarts %d, want 1 and 1", f.Starts(testApp), f.Restarts(testApp))
	}
	// The call log says what the app was when the start came: up.
	var states []string
	for _, c := range f.Calls() {
		if c.Method == http.MethodPost {
			states = append(states, c.State)
		}
	}
	if len(states) != 1 || states[0] != StateShouldBeUp {
		t.Errorf("states of the start calls %q, want [SHOULD_BE_UP]", states)
	}
}

func TestTransitions_InitialStates(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{DeployDelay: deployDel, BootTime: bootTime, StopLinger: linger, Now: clk.Now})
	cases := []struct {
		app  App
		want seen
	}{
		{App{State: StateShouldBeUp}, seen{StateShouldBeUp, DeploymentOK, ActionDeploy, 1, "UP", 200}},
		{App{State: StateShouldBeDown}, seen{StateShouldBeDown, DeploymentOK, ActionUndeploy, 2, "", 404}},
		{App{State: StateWantsToBeUp}, seen{StateWantsToBeUp, DeploymentWIP, ActionDeploy, 3, "BOOTING", 404}},
		{App{State: StateModerated}, seen{StateModerated, DeploymentOK, ActionUndeploy, 2, "", 404}},
		{App{NeverDeployed: true}, seen{StateShouldBeDown, "", "", 0, "", 404}},
	}
	for _, c := range cases {
		c.app.Owner = testOrga
		a := f.AddApp(c.app)
		if got := observe(t, f, a.ID); got != c.want {
			t.Errorf("%+v: got %+v, want %+v", c.app, got, c.want)
		}
	}
}

// The fake's own timers (no test clock) move the app along. The boot lasts a
// second so that its WANTS_TO_BE_UP is seen however slow the machine's polls are
// (at 50 ms, a loaded machine's poll missed it).
func TestTransitions_RealTime(t *testing.T) {
	f := startFake(t, Options{DeployDelay: 20 * time.Millisecond, BootTime: time.Second, StopLinger: 30 * time.Millisecond})
	f.AddApp(App{ID: testApp, Owner: testOrga, State: StateShouldBeDown})
	if a := post(t, f, "POST", testApp); a.status != http.StatusOK {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	testwait.For(t, 5*time.Second, "WANTS_TO_BE_UP", func() bool { return observe(t, f, testApp).state == StateWantsToBeUp })
	testwait.For(t, 5*time.Second, "SHOULD_BE_UP and served", func() bool {
		s := observe(t, f, testApp)
		return s.state == StateShouldBeUp && s.edge == 200
	})
	if a := post(t, f, "DELETE", testApp); a.status != http.StatusOK {
		t.Fatalf("stop: %d %s", a.status, a.body)
	}
	testwait.For(t, 5*time.Second, "SHOULD_BE_DOWN", func() bool { return observe(t, f, testApp).state == StateShouldBeDown })
}

func TestTransitions_EdgeRoutesAMomentAfterTheStateSaysUp(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{BootTime: bootTime, EdgeDelay: 3 * time.Second, Now: clk.Now})
	f.AddApp(App{ID: testApp, Owner: testOrga, State: StateShouldBeDown})
	post(t, f, "POST", testApp)
	clk.Add(bootTime)
	if got := observe(t, f, testApp); got.state != StateShouldBeUp || got.edge != 404 {
		t.Fatalf("just up: %+v, want SHOULD_BE_UP with the edge still answering 404", got)
	}
	clk.Add(3 * time.Second)
	if got := observe(t, f, testApp); got.edge != 200 {
		t.Fatalf("after the edge delay: %+v", got)
	}
	// A restart keeps serving throughout: the old instance answers.
	post(t, f, "POST", testApp)
	clk.Add(bootTime)
	if got := observe(t, f, testApp); got.edge != 200 {
		t.Fatalf("after a restart: %+v", got)
	}
}

package fakeclever

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConsole_ActsFromOutside(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{DeployDelay: deployDel, BootTime: bootTime, StopLinger: linger, Now: clk.Now})
	a := f.AddApp(App{ID: testApp, Owner: testOrga})
	c := f.Console(testApp)
	state := func() string { st, _ := f.App(testApp); return st.State }

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); !errors.Is(err, ErrLocked) {
		t.Errorf("stop during a stop: %v, want ErrLocked", err)
	}
	clk.Add(linger)
	if state() != StateShouldBeDown {
		t.Fatalf("after a console stop: %s", state())
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Errorf("a second console start while starting: %v, want nil (nothing to do)", err)
	}
	clk.Add(deployDel + bootTime)
	if state() != StateShouldBeUp {
		t.Fatalf("after a console start: %s", state())
	}
	if err := c.Start(); err != nil || f.Restarts(testApp) != 0 {
		t.Errorf("console start of an up app: %v, restarts %d", err, f.Restarts(testApp))
	}
	// Redeploy of an up app: a restart, but not one reaper caused.
	if err := c.Redeploy(); err != nil {
		t.Fatal(err)
	}
	clk.Add(deployDel)
	if st, _ := f.App(testApp); st.Deployment.State != DeploymentWIP || st.State != StateShouldBeUp {
		t.Errorf("during a redeploy: %+v", st)
	}
	clk.Add(bootTime)
	if f.Starts(testApp) != 0 || f.Restarts(testApp) != 0 {
		t.Errorf("console actions counted: starts %d restarts %d", f.Starts(testApp), f.Restarts(testApp))
	}

	// A forced state shows in the API and blocks starts and stops.
	if err := c.SetState(StateModerated); err != nil {
		t.Fatal(err)
	}
	if state() != StateModerated {
		t.Errorf("forced state: %s", state())
	}
	if got := post(t, f, "DELETE", testApp).status; got != 400 {
		t.Errorf("stop of a moderated app: %d", got)
	}
	if err := c.SetState("SHOULD_BE_UP"); err == nil {
		t.Error("SetState accepted a state that cannot be forced")
	}
	_ = c.SetState("")
	if state() != StateShouldBeUp {
		t.Errorf("lifted state: %s", state())
	}

	if err := c.SetShutdownable(false); err != nil {
		t.Fatal(err)
	}
	var app struct{ Deployment struct{ Shutdownable bool } }
	call(t, "GET", f.BridgeURL()+"/v2/organisations/"+testOrga+"/applications/"+a.ID, bearer(f)).json(t, &app)
	if app.Deployment.Shutdownable {
		t.Error("shutdownable still true")
	}

	if err := c.Delete(); err != nil {
		t.Fatal(err)
	}
	if got := post(t, f, "POST", testApp).status; got != 404 {
		t.Errorf("start of a deleted app: %d", got)
	}
	if err := c.Stop(); !errors.Is(err, ErrUnknownApp) {
		t.Errorf("console of a deleted app: %v", err)
	}
}

func TestConsole_RedeployMakesANeverDeployedAppStartable(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{Now: clk.Now, BootTime: time.Second})
	f.AddApp(App{ID: testApp, Owner: testOrga, NeverDeployed: true})
	if got := post(t, f, "POST", testApp); got.status != 400 || !strings.Contains(string(got.body), `"id":4014`) {
		t.Fatalf("start of a never deployed app: %d %s", got.status, got.body)
	}
	if err := f.Console(testApp).Redeploy(); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	if st, _ := f.App(testApp); st.State != StateShouldBeUp {
		t.Errorf("after a redeploy: %s", st.State)
	}
}

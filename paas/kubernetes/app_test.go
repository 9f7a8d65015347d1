package kubernetes

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

// TestApp_SetView follows an app through the views the informer delivers: a
// scale from outside, a wake of ours, readiness of the current generation
// only, a failed wake, a deletion.
func TestApp_SetView(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := &app{id: "web", ref: ref{KindDeployment, "shop", "web"}}
	a.setView(&view{replicas: 0, generation: 1, observed: 1}, now)
	if a.state() != paas.StateShouldBeDown || a.dep != nil {
		t.Fatalf("found at 0: %s %+v", a.state(), a.dep)
	}
	// Scaled up by someone else: WANTS_TO_BE_UP, then up when ready.
	c := a.setView(&view{replicas: 2, generation: 2, observed: 1, ready: 0}, now)
	if !c.outsideUp || a.state() != paas.StateWantsToBeUp || a.dep.State != paas.DeploymentWIP {
		t.Fatalf("outside up: %+v %s %+v", c, a.state(), a.dep)
	}
	// A ready count of an older generation is not ready.
	a.setView(&view{replicas: 2, generation: 2, observed: 1, ready: 2}, now)
	if a.state() != paas.StateWantsToBeUp {
		t.Fatalf("ready of an old generation: %s", a.state())
	}
	c = a.setView(&view{replicas: 2, generation: 2, observed: 2, ready: 1}, now)
	if !c.ready || a.state() != paas.StateShouldBeUp || a.dep.State != paas.DeploymentOK || a.awake != 2 {
		t.Fatalf("ready: %+v %s %+v awake %d", c, a.state(), a.dep, a.awake)
	}
	// Scaled to 0 by someone else: no Exit (not a crash), the deployment
	// still OK, so the next request wakes it.
	c = a.setView(&view{replicas: 0, generation: 3, observed: 2}, now.Add(time.Minute))
	if !c.outsideDown || a.dep.State != paas.DeploymentOK || a.awake != 2 {
		t.Fatalf("outside down: %+v dep %+v awake %d", c, a.dep, a.awake)
	}
	// A wake of ours is not "from outside"; a progress deadline fails it.
	a.ours, a.dep = true, &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: now}
	c = a.setView(&view{replicas: 2, generation: 4, observed: 3}, now)
	if c.outsideUp || a.dep.At != now {
		t.Fatalf("our wake taken for an outside one: %+v %+v", c, a.dep)
	}
	c = a.setView(&view{replicas: 2, generation: 4, observed: 4, failed: "timed out"}, now)
	// Starting, its deployment failed, until the scale back to 0 is seen.
	if !c.failed || a.dep.State != paas.DeploymentFail || a.observation().State != paas.StateWantsToBeUp {
		t.Fatalf("failed wake: %+v %+v %s", c, a.dep, a.observation().State)
	}
	// Scaled back by us: not from outside.
	c = a.setView(&view{replicas: 0, generation: 5, observed: 4}, now)
	if c.outsideDown {
		t.Fatalf("our scale-back taken for an outside stop: %+v", c)
	}
	if c = a.setView(nil, now); !c.deleted || a.missing() == nil {
		t.Fatalf("deleted: %+v", c)
	}
}

package paastest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

func testUnknown(t *testing.T, h Harness) {
	u := h.Unknown
	notFound := func(call string, err error) {
		t.Helper()
		if !errors.Is(err, paas.ErrNotFound) || paas.Retryable(err) {
			t.Errorf("%s of an unknown app: %v, want paas.ErrNotFound (not retryable)", call, err)
		}
	}
	_, err := h.Client.Observe(t.Context(), u)
	notFound("Observe", err)
	notFound("Start", h.Client.Start(t.Context(), u))
	notFound("Stop", h.Client.Stop(t.Context(), u))
	if r, ok := h.Client.(paas.DeploymentReader); ok {
		_, err := r.LastDeployment(t.Context(), u)
		notFound("LastDeployment", err)
	}
	for _, app := range h.Apps {
		checkCount(t, h.Starts, app, "starts after calls on an unknown app", 0)
	}
}

func testCancelled(t *testing.T, h Harness) {
	down, up := h.Apps[0], h.Apps[1]
	startUp(t, h, up)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// A call may still answer (from memory, or an ask the platform took), but it
	// never waits, and an error it returns is the context's.
	check := func(call string, app paas.App, f func() error) {
		t.Helper()
		var err error
		withTimeout(t, prompt, call+" with a cancelled context", func() { err = f() })
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s(%s) with a cancelled context: %v, want nil or an error wrapping context.Canceled", call, app, err)
		}
	}
	for _, app := range []paas.App{down, up} {
		check("Observe", app, func() error { _, err := h.Client.Observe(ctx, app); return err })
		if r, ok := h.Client.(paas.DeploymentReader); ok {
			check("LastDeployment", app, func() error { _, err := r.LastDeployment(ctx, app); return err })
		}
	}
	if b, ok := h.Client.(paas.BatchObserver); ok {
		check("ObserveAll", down, func() error { _, err := b.ObserveAll(ctx, h.Apps[:]); return err })
	}
	check("Start", down, func() error { return h.Client.Start(ctx, down) })
	check("Stop", up, func() error { return h.Client.Stop(ctx, up) })
	if w, ok := h.Client.(paas.Watcher); ok {
		withTimeout(t, prompt, "Watch with a cancelled context", func() { w.Watch(ctx, func(string) {}) })
	}
}

func testStartFailed(t *testing.T, h Harness) {
	skipUnless(t, h.Failing.ID != "", "the harness has no app whose start fails (Failing)")
	app := h.Failing
	began := time.Now()
	err := h.Client.Start(t.Context(), app)
	switch {
	case err == nil:
		// Accepted: the failure shows in the deployment.
	case errors.Is(err, paas.ErrStartFailed):
		if paas.Retryable(err) {
			t.Errorf("Start of an app that cannot start: %v, retryable; want not (it fails again without a change)", err)
		}
	default:
		t.Fatalf("Start of an app that cannot start: %v, want nil (the failure shows in its deployment) or paas.ErrStartFailed", err)
	}
	// Either way its last deployment says so, and it is never observed up.
	var dep *paas.Deployment
	var obs paas.Observation
	if !testwait.Until(waitFor, func() bool {
		obs = observe(t, h, app)
		if obs.State == paas.StateShouldBeUp {
			t.Fatalf("%s: a start that fails: observed %s", app, describe(obs))
		}
		dep = lastDeployment(t, h, app)
		return dep != nil && !dep.State.InProgress() && !dep.At.Before(began.Add(-slack))
	}) {
		t.Fatalf("%s: a start that fails: its last deployment is still %s after %v (observed %s), want one that ended",
			app, describeDep(dep), waitFor, describe(obs))
	}
	if dep.State != paas.DeploymentFail || dep.Action != actionDeploy {
		t.Errorf("%s: a start that fails: last %s, want FAIL DEPLOY", app, describeDep(dep))
	}
	// Exited says the app ran (reaper starts it again): never for a start that
	// could not run at all.
	if err != nil && dep.Exited {
		t.Errorf("%s: a start refused with %v: its FAIL deployment says Exited, want not (the app never ran)", app, err)
	}
	waitState(t, h, app, paas.StateShouldBeDown, paas.StateWantsToBeUp)
	checkCount(t, h.Running, app, "instances running after a start that failed", 0)
	stop(t, h, app) // harmless
}

func testNeverDeployed(t *testing.T, h Harness) {
	skipUnless(t, h.NeverDeployed.ID != "", "the platform has no app that was never deployed (NeverDeployed)")
	app := h.NeverDeployed
	if obs := observe(t, h, app); obs.State != paas.StateShouldBeDown {
		t.Errorf("%s: an app never deployed observed %s, want SHOULD_BE_DOWN", app, describe(obs))
	}
	if r, ok := h.Client.(paas.DeploymentReader); ok {
		if dep, err := r.LastDeployment(t.Context(), app); dep != nil || err != nil {
			t.Errorf("%s: LastDeployment of an app never deployed: %s, %v; want nil, nil", app, describeDep(dep), err)
		}
	}
	if err := h.Client.Start(t.Context(), app); !errors.Is(err, paas.ErrNeverDeployed) || paas.Retryable(err) {
		t.Errorf("%s: Start of an app never deployed: %v, want paas.ErrNeverDeployed (not retryable)", app, err)
	}
	if obs := observe(t, h, app); obs.State != paas.StateShouldBeDown {
		t.Errorf("%s: after a refused Start, observed %s, want SHOULD_BE_DOWN", app, describe(obs))
	}
	checkCount(t, h.Starts, app, "starts of an app never deployed", 0)
}

func testNotShutdownable(t *testing.T, h Harness) {
	skipUnless(t, h.NotShutdownable.ID != "", "the platform has no app that must not be stopped (NotShutdownable)")
	app := h.NotShutdownable
	obs := observe(t, h, app)
	if !obs.NotShutdownable || obs.State != paas.StateShouldBeUp {
		t.Errorf("%s: observed %s, NotShutdownable %v; want SHOULD_BE_UP, NotShutdownable", app, describe(obs), obs.NotShutdownable)
	}
	running := 0
	if h.Running != nil {
		running = h.Running(t, app)
	}
	if err := h.Client.Stop(t.Context(), app); !errors.Is(err, paas.ErrNotShutdownable) || paas.Retryable(err) {
		t.Errorf("%s: Stop of an app that must not be stopped: %v, want paas.ErrNotShutdownable (not retryable)", app, err)
	}
	if obs := observe(t, h, app); obs.State != paas.StateShouldBeUp {
		t.Errorf("%s: after a refused Stop, observed %s, want SHOULD_BE_UP", app, describe(obs))
	}
	checkCount(t, h.Running, app, "instances running after a refused Stop", running)
}

func testOutage(t *testing.T, h Harness) {
	skipUnless(t, h.Outage != nil, "the harness cannot make the platform unreachable (Outage)")
	down, up := h.Apps[0], h.Apps[1]
	startUp(t, h, up)
	restore := h.Outage(t)
	retryable := func(call string, app paas.App, err error, nilOK bool) {
		t.Helper()
		switch {
		case err == nil && !nilOK:
			t.Errorf("%s(%s) while the platform cannot be reached: nil, want a retryable error", call, app)
		case err != nil && !paas.Retryable(err):
			t.Errorf("%s(%s) while the platform cannot be reached: %v, want a retryable error (paas.Retryable)", call, app, err)
		}
	}
	withTimeout(t, waitFor, "the calls while the platform cannot be reached", func() {
		retryable("Start", down, h.Client.Start(t.Context(), down), false)
		retryable("Stop", up, h.Client.Stop(t.Context(), up), false)
		// Observe may answer from what the client last saw.
		_, err := h.Client.Observe(t.Context(), down)
		retryable("Observe", down, err, true)
	})
	restore()
	// Nothing was lost: the app left up is up, and the other starts.
	waitState(t, h, up, paas.StateShouldBeUp)
	startUp(t, h, down)
	checkCount(t, h.Starts, down, "starts after the outage", 1)
}

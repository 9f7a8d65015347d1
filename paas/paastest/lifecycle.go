package paastest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

func testStoppedIsDown(t *testing.T, h Harness) {
	for _, app := range h.Apps {
		if obs := observe(t, h, app); obs.State != paas.StateShouldBeDown {
			t.Errorf("%s: a stopped app observed %s, want SHOULD_BE_DOWN", app, describe(obs))
		}
		checkCount(t, h.Running, app, "instances running", 0)
		checkCount(t, h.Starts, app, "starts after Observe alone", 0)
	}
}

func testStartReachesUp(t *testing.T, h Harness) {
	app, other := h.Apps[0], h.Apps[1]
	began := time.Now()
	start(t, h, app)
	if !h.Lags {
		// Start returns once the platform accepted: the app is starting, maybe up.
		if obs := observe(t, h, app); obs.State != paas.StateWantsToBeUp && obs.State != paas.StateShouldBeUp {
			t.Errorf("%s: right after Start returned, observed %s, want WANTS_TO_BE_UP or SHOULD_BE_UP", app, describe(obs))
		}
	}
	waitState(t, h, app, paas.StateShouldBeUp, upVia(h)...)
	checkDeployment(t, h, app, actionDeploy, began)
	checkServes(t, h, app)
	checkCount(t, h.Starts, app, "starts", 1)
	checkCount(t, h.Running, app, "instances running", 1)

	// The start was the app's alone.
	if obs := observe(t, h, other); obs.State != paas.StateShouldBeDown {
		t.Errorf("%s: observed %s after a start of %s, want SHOULD_BE_DOWN", other, describe(obs), app)
	}
	checkCount(t, h.Starts, other, "starts after a start of another app", 0)
	checkCount(t, h.Running, other, "instances running after a start of another app", 0)
}

func testStartOnce(t *testing.T, h Harness) {
	app := h.Apps[0]
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = h.Client.Start(t.Context(), app) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			accepted++
		case h.Locks && errors.Is(err, paas.ErrBusy):
			// Refused while the first start runs: the platform's lock.
		default:
			t.Errorf("%s: one of %d concurrent Starts: %v, want nil%s", app, len(errs), err, busyAllowed(h))
		}
	}
	if accepted == 0 {
		t.Fatalf("%s: none of %d concurrent Starts was accepted: %v", app, len(errs), errs)
	}
	waitState(t, h, app, paas.StateShouldBeUp, upVia(h)...)
	checkCount(t, h.Starts, app, "starts after concurrent Starts", 1)
	checkCount(t, h.Running, app, "instances running after concurrent Starts", 1)

	if h.RestartsWhenUp {
		t.Log("paastest: Start on an app that is up restarts it on this platform (RestartsWhenUp): not sent")
		return
	}
	start(t, h, app)
	if obs := observe(t, h, app); obs.State != paas.StateShouldBeUp {
		t.Errorf("%s: after a Start on the app up, observed %s, want SHOULD_BE_UP (Start does nothing on an app that is up)", app, describe(obs))
	}
	checkCount(t, h.Starts, app, "starts after a Start on the app up", 1)
	checkCount(t, h.Running, app, "instances running after a Start on the app up", 1)
	checkServes(t, h, app)
}

// busyAllowed completes the want of an error message.
func busyAllowed(h Harness) string {
	if h.Locks {
		return " or paas.ErrBusy"
	}
	return ""
}

func testStopReachesDown(t *testing.T, h Harness) {
	app := h.Apps[0]
	startUp(t, h, app)
	began := time.Now()
	stop(t, h, app)
	if !h.Lags {
		if obs := observe(t, h, app); obs.State != paas.StateShouldBeDown {
			t.Errorf("%s: right after Stop returned, observed %s, want SHOULD_BE_DOWN", app, describe(obs))
		}
	}
	waitState(t, h, app, paas.StateShouldBeDown, downVia(h)...)
	checkDeployment(t, h, app, actionUndeploy, began)
	checkCount(t, h.Running, app, "instances running after a stop", 0)
}

func testStopIdempotent(t *testing.T, h Harness) {
	app := h.Apps[0]
	// A stop of an app that is down does nothing.
	stop(t, h, app)
	if obs := observe(t, h, app); obs.State != paas.StateShouldBeDown {
		t.Errorf("%s: after a Stop of the app down, observed %s, want SHOULD_BE_DOWN", app, describe(obs))
	}
	checkCount(t, h.Starts, app, "starts after a Stop of the app down", 0)

	startUp(t, h, app)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = h.Client.Stop(t.Context(), app) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			accepted++
		case h.Locks && errors.Is(err, paas.ErrBusy):
		default:
			t.Errorf("%s: one of %d concurrent Stops: %v, want nil%s", app, len(errs), err, busyAllowed(h))
		}
	}
	if accepted == 0 {
		t.Fatalf("%s: none of %d concurrent Stops was accepted: %v", app, len(errs), errs)
	}
	waitState(t, h, app, paas.StateShouldBeDown, downVia(h)...)
	stop(t, h, app) // down by now: never refused
	if obs := observe(t, h, app); obs.State != paas.StateShouldBeDown {
		t.Errorf("%s: after a second Stop, observed %s, want SHOULD_BE_DOWN", app, describe(obs))
	}
	checkCount(t, h.Starts, app, "starts after the stops", 1)
	checkCount(t, h.Running, app, "instances running after the stops", 0)
}

func testCycle(t *testing.T, h Harness) {
	app := h.Apps[0]
	startUp(t, h, app)
	stopDown(t, h, app)
	// Woken again, as the next request after a sleep does.
	began := time.Now()
	startUp(t, h, app)
	checkDeployment(t, h, app, actionDeploy, began)
	checkServes(t, h, app)
	checkCount(t, h.Starts, app, "starts after start, stop, start", 2)
	checkCount(t, h.Running, app, "instances running after start, stop, start", 1)
	began = time.Now()
	stopDown(t, h, app)
	checkDeployment(t, h, app, actionUndeploy, began)
	checkCount(t, h.Running, app, "instances running after the second stop", 0)
}

func testStoppedOutside(t *testing.T, h Harness) {
	skipUnless(t, h.StopOutside != nil, "the harness cannot stop an app from outside (StopOutside)")
	app := h.Apps[0]
	startUp(t, h, app)
	upAt := time.Now()
	h.StopOutside(t, app)
	// The observation follows the platform, not what the client last did.
	obs := waitState(t, h, app, paas.StateShouldBeDown, paas.StateShouldBeUp)
	// How it ended, when the driver tells: this exit, not an earlier one.
	if e := obs.Exit; e != nil && (e.At.Before(upAt.Add(-slack)) || e.At.After(time.Now()) || e.Status == "") {
		t.Errorf("%s: stopped from outside: Exit %+v, want one dated since it came up (%s), saying how", app, *e, upAt.Format(time.RFC3339Nano))
	}
	checkCount(t, h.Running, app, "instances running after a stop from outside", 0)
	// And the next request wakes it.
	began := time.Now()
	startUp(t, h, app)
	checkDeployment(t, h, app, actionDeploy, began)
	checkServes(t, h, app)
	checkCount(t, h.Running, app, "instances running after the start that followed", 1)
}

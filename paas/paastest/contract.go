package paastest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

// Harness is one client under test and what the suite may know of its platform.
// Only Client and Apps are required; each other field enables the checks that need
// it, and the suite says which it skipped.
type Harness struct {
	// Client is the client under test; the harness closes it in t.Cleanup.
	Client paas.Client
	// Apps are two apps that exist on the platform, stopped (SHOULD_BE_DOWN), for
	// the subtest to start and stop.
	Apps [2]paas.App
	// Unknown is an app the platform does not have; zero means an id no
	// platform has ("paastest-unknown").
	Unknown paas.App

	// Starts returns how many starts the platform made of the app since the
	// harness was made: processes spawned, container start calls, deployments
	// accepted. nil: not counted (the recording fake, which has no platform).
	Starts func(t *testing.T, app paas.App) int
	// Running returns how many instances of the app run now (processes,
	// running containers, instances up). nil: not counted.
	Running func(t *testing.T, app paas.App) int
	// Serves reports whether the app answers requests now. Set it for drivers
	// that probe readiness: SHOULD_BE_UP must then mean the app serves. nil:
	// not checked (Clever Cloud says SHOULD_BE_UP before its edge routes).
	Serves func(t *testing.T, app paas.App) bool
	// StopOutside stops a running app as someone else would (a kill, docker
	// stop, the console), without the client. nil: the platform has no outside.
	StopOutside func(t *testing.T, app paas.App)
	// Outage makes the platform unreachable until restore is called. nil: the
	// platform cannot fail apart from the client (local processes).
	Outage func(t *testing.T) (restore func())

	// Failing is an app whose next start fails (its command cannot run, its
	// container exits before it is ready, its deployment fails); zero: none.
	Failing paas.App
	// NeverDeployed is an app that exists but was never deployed, so that it
	// cannot be started (Clever Cloud's 4014); zero when the platform has no
	// such notion.
	NeverDeployed paas.App
	// NotShutdownable is a running app the platform says must never be stopped;
	// zero when the platform has no such notion.
	NotShutdownable paas.App

	// Lags says the platform's state lags behind an ask: SHOULD_BE_DOWN for a
	// while after a start is accepted, SHOULD_BE_UP for a while after a stop
	// (Clever Cloud). Without it, the state right after Start returns is
	// WANTS_TO_BE_UP or SHOULD_BE_UP, and right after Stop returns
	// SHOULD_BE_DOWN.
	Lags bool
	// Locks says the platform refuses a start or a stop sent while another
	// runs, with paas.ErrBusy (Clever Cloud's locked app). Without it, a second
	// ask during a start or a stop is accepted and does nothing.
	Locks bool
	// RestartsWhenUp says Start on an app that is up restarts it (Clever
	// Cloud): paas.Client tells callers not to send it, so the suite does not.
	RestartsWhenUp bool
	// Unwatched says the client is a paas.Watcher that does not report these
	// apps (paas/multi over a member that is none): Watch is not checked.
	Unwatched bool
}

// Run runs the contract every paas.Client must meet. newHarness returns a fresh
// harness, its client and platform closed in t.Cleanup; it is called once per
// subtest. Subtests run one after the other, never in parallel.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"Observe/StoppedAppIsDown", testStoppedIsDown},
		{"Start/ReachesUp", testStartReachesUp},
		{"Start/ConcurrentStartsStartOnce", testStartOnce},
		{"Stop/ReachesDown", testStopReachesDown},
		{"Stop/Idempotent", testStopIdempotent},
		{"Cycle/StartStopStart", testCycle},
		{"StoppedFromOutside", testStoppedOutside},
		{"Errors/UnknownAppIsNotFound", testUnknown},
		{"Errors/CancelledContextReturnsPromptly", testCancelled},
		{"Errors/StartFailed", testStartFailed},
		{"Errors/NeverDeployed", testNeverDeployed},
		{"Errors/NotShutdownable", testNotShutdownable},
		{"Errors/OutageIsRetryable", testOutage},
		{"Watch/ReportsStartAndStop", testWatchReports},
		{"Watch/StopsWhenItsContextEnds", testWatchStops},
		{"ObserveAll/AgreesWithObserve", testObserveAll},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if h.Client == nil || h.Apps[0].ID == "" || h.Apps[1].ID == "" || h.Apps[0] == h.Apps[1] {
				t.Fatalf("paastest: the harness needs a Client and two distinct Apps (got %v)", h.Apps)
			}
			if h.Unknown.ID == "" {
				h.Unknown = paas.App{ID: "paastest-unknown"}
			}
			tc.fn(t, h)
		})
	}
}

// waitFor bounds every wait of the suite: generous, since real engines run on
// shared machines.
const waitFor = 20 * time.Second

// prompt bounds a call that must not wait on anything (a cancelled context).
const prompt = 5 * time.Second

// slack is how far a deployment's date may be from the start or stop it dates
// (the platform's clock against ours).
const slack = 10 * time.Second

// The deployment actions reaper's decision reads (reaper/decide.go).
const (
	actionDeploy   = "DEPLOY"
	actionUndeploy = "UNDEPLOY"
)

func observe(t *testing.T, h Harness, app paas.App) paas.Observation {
	t.Helper()
	obs, err := h.Client.Observe(t.Context(), app)
	if err != nil {
		t.Fatalf("Observe(%s): %v", app, err)
	}
	return obs
}

func start(t *testing.T, h Harness, app paas.App) {
	t.Helper()
	if err := h.Client.Start(t.Context(), app); err != nil {
		t.Fatalf("Start(%s): %v", app, err)
	}
}

func stop(t *testing.T, h Harness, app paas.App) {
	t.Helper()
	if err := h.Client.Stop(t.Context(), app); err != nil {
		t.Fatalf("Stop(%s): %v", app, err)
	}
}

// describe says what an observation holds, for failures.
func describe(o paas.Observation) string {
	return string(o.State) + " (" + describeDep(o.Deployment) + ")"
}

func describeDep(d *paas.Deployment) string {
	if d == nil {
		return "no deployment"
	}
	s := fmt.Sprintf("deployment %s %s at %s", d.State, d.Action, d.At.Format(time.RFC3339Nano))
	if d.Cause != "" {
		s += ", cause " + d.Cause
	}
	return s
}

// waitState polls Observe until the app is in state want, and returns that
// observation. Every state seen on the way must be want or one of via.
func waitState(t *testing.T, h Harness, app paas.App, want paas.State, via ...paas.State) paas.Observation {
	t.Helper()
	var obs paas.Observation
	var err error
	var seen []paas.State
	if !testwait.Until(waitFor, func() bool {
		obs, err = h.Client.Observe(t.Context(), app)
		if err != nil {
			return false
		}
		if len(seen) == 0 || seen[len(seen)-1] != obs.State {
			seen = append(seen, obs.State)
		}
		if obs.State != want && !slices.Contains(via, obs.State) {
			t.Fatalf("%s: observed %s on the way to %s (states seen: %v)", app, describe(obs), want, seen)
		}
		return obs.State == want
	}) {
		t.Fatalf("%s: not %s after %v: last %s, err %v (states seen: %v)", app, want, waitFor, describe(obs), err, seen)
	}
	return obs
}

// upVia are the states allowed on the way up after a start.
func upVia(h Harness) []paas.State {
	if h.Lags {
		return []paas.State{paas.StateShouldBeDown, paas.StateWantsToBeUp}
	}
	return []paas.State{paas.StateWantsToBeUp}
}

// downVia are the states allowed on the way down after a stop.
func downVia(h Harness) []paas.State {
	if h.Lags {
		return []paas.State{paas.StateShouldBeUp}
	}
	return nil
}

// startUp starts the app and waits until it is up.
func startUp(t *testing.T, h Harness, app paas.App) paas.Observation {
	t.Helper()
	start(t, h, app)
	return waitState(t, h, app, paas.StateShouldBeUp, upVia(h)...)
}

// stopDown stops the app and waits until it is down.
func stopDown(t *testing.T, h Harness, app paas.App) paas.Observation {
	t.Helper()
	stop(t, h, app)
	return waitState(t, h, app, paas.StateShouldBeDown, downVia(h)...)
}

// lastDeployment is the app's last deployment as reaper reads it: from the
// DeploymentReader when the client is one, else from Observe.
func lastDeployment(t *testing.T, h Harness, app paas.App) *paas.Deployment {
	t.Helper()
	if r, ok := h.Client.(paas.DeploymentReader); ok {
		d, err := r.LastDeployment(t.Context(), app)
		if err != nil {
			t.Fatalf("LastDeployment(%s): %v", app, err)
		}
		return d
	}
	return observe(t, h, app).Deployment
}

// checkDeployment checks that the app's last deployment is done, OK, of the
// action given, and dated from after began (within slack).
func checkDeployment(t *testing.T, h Harness, app paas.App, action string, began time.Time) {
	t.Helper()
	d := lastDeployment(t, h, app)
	switch {
	case d == nil:
		t.Errorf("%s: no last deployment, want an OK %s (reaper reads it to tell a start that failed)", app, action)
	case d.State != paas.DeploymentOK || d.Action != action:
		t.Errorf("%s: last %s, want OK %s", app, describeDep(d), action)
	case d.At.Before(began.Add(-slack)) || d.At.After(time.Now().Add(slack)):
		t.Errorf("%s: last %s, dated outside the %s asked at %s", app, describeDep(d), action, began.Format(time.RFC3339Nano))
	}
}

// checkCount checks a count the harness gives, when it gives it.
func checkCount(t *testing.T, f func(*testing.T, paas.App) int, app paas.App, what string, want int) {
	t.Helper()
	if f == nil {
		return
	}
	if n := f(t, app); n != want {
		t.Errorf("%s: %d %s, want %d", app, n, what, want)
	}
}

// checkServes checks that an app observed up serves, when the harness can tell.
func checkServes(t *testing.T, h Harness, app paas.App) {
	t.Helper()
	if h.Serves != nil && !h.Serves(t, app) {
		t.Errorf("%s: observed SHOULD_BE_UP, but it does not serve", app)
	}
}

// skipUnless skips the subtest when the harness lacks what it needs.
func skipUnless(t *testing.T, ok bool, why string) {
	t.Helper()
	if !ok {
		t.Skip("paastest: " + why)
	}
}

// withTimeout runs f, failing the test if it does not return within limit.
func withTimeout(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return within %v", what, limit)
	}
}

package fakeclever

import (
	"errors"
	"net/http"
	"time"
)

// Application states, as Clever Cloud names them.
const (
	StateShouldBeUp       = "SHOULD_BE_UP"
	StateShouldBeDown     = "SHOULD_BE_DOWN"
	StateWantsToBeUp      = "WANTS_TO_BE_UP"
	StateModerated        = "MODERATED"
	StateDefaultOfPayment = "DEFAULT_OF_PAYMENT"
)

// Deployment states and actions, as Clever Cloud names them.
const (
	DeploymentWIP       = "WIP"
	DeploymentOK        = "OK"
	DeploymentFail      = "FAIL"
	DeploymentCancelled = "CANCELLED"

	ActionDeploy   = "DEPLOY"
	ActionUndeploy = "UNDEPLOY"
)

// App describes one application of the fake platform, for AddApp.
type App struct {
	// ID is app_<uuid>; empty gives a fresh random one.
	ID string
	// Owner is orga_… or user_…; empty gives DefaultOrganisation. A user_ owner is
	// the fake's user (Options.UserID): the fake serves one user, like one credential.
	Owner string
	// Name is the display name; empty gives the ID.
	Name string
	// State is the state the app starts in: SHOULD_BE_UP (the default),
	// SHOULD_BE_DOWN, WANTS_TO_BE_UP (a deployment in progress), MODERATED or
	// DEFAULT_OF_PAYMENT (which the console can lift with SetState("")).
	State string
	// Zone defaults to "par"; Flavor (the instance size) to "XS".
	Zone, Flavor string
	// NotShutdownable makes deployment.shutdownable false.
	NotShutdownable bool
	// NeverDeployed makes the app stopped with no deployment: a start answers the
	// 4014 error until the console redeploys it.
	NeverDeployed bool
	// Handler answers the app's requests at the edge while it is up. When nil,
	// BackendURL (if set) is reverse-proxied, else a default handler answers 200
	// JSON with the app id and the time its instance started.
	Handler http.Handler
	// BackendURL is an http URL the edge proxies to while the app is up.
	BackendURL string
	// VHosts are extra domains of the app, besides app-<uuid>.cleverapps.io.
	VHosts []string
	// EdgeAddr, when set (e.g. 127.0.0.1:0), gives the app an edge listener of its
	// own that answers for it whatever the Host header; see Fake.AppEdgeURL.
	EdgeAddr string
}

// Errors the model returns; the API and the console turn them into answers.
var (
	ErrUnknownApp    = errors.New("fakeclever: no such app")
	ErrLocked        = errors.New("fakeclever: app locked by another operation")
	ErrNeverDeployed = errors.New("fakeclever: app was never deployed")
	ErrModerated     = errors.New("fakeclever: app is moderated or unpaid")
)

// maxDeployments bounds the history kept per app.
const maxDeployments = 50

// deployment is one start (DEPLOY) or stop (UNDEPLOY). Its state at any moment is
// computed from its times, so no timer is needed and reads never race.
type deployment struct {
	num        int
	uuid       string
	instanceID string    // the instance a DEPLOY brings up
	action     string    // ActionDeploy or ActionUndeploy
	asked      time.Time // when the start or stop was accepted
	begin      time.Time // when it shows in the list: its date
	end        time.Time // when it finishes
	outcome    string    // OK, FAIL or CANCELLED once finished
	fromUp     bool      // a DEPLOY on an app that was up: a restart or a redeploy
	prevStart  time.Time // when the instance serving before it started
	prevID     string    // and its id
	commit     string
	cause      string
}

// timing is the fake's pace.
type timing struct {
	deployDelay, bootTime, stopLinger, edgeDelay time.Duration
}

// app is the fake's record of one application.
type app struct {
	App
	deps       []*deployment // oldest first
	override   string        // MODERATED or DEFAULT_OF_PAYMENT, set by the console
	failNext   bool
	cancelNext bool
	starts     int
	restarts   int
	nextNum    int
}

// instance is an instance as the API lists it.
type instance struct {
	id, state string
	deployNum int
	commit    string
	created   time.Time
}

// view is what the platform shows of an app at one moment.
type view struct {
	state      string    // what the API reports (the console's override applied)
	locked     bool      // a deployment is queued or in progress: start and stop fail
	up         bool      // settled up: a start now restarts the app
	serving    bool      // the edge routes to an instance
	started    time.Time // when the serving instance started
	instID     string    // and its id
	instances  []instance
	lastDeploy *deployment // the newest visible deployment, nil when none
}

func (a *app) last() *deployment {
	if len(a.deps) == 0 {
		return nil
	}
	return a.deps[len(a.deps)-1]
}

// depState is d's state at now.
func (d *deployment) state(now time.Time) string {
	if now.Before(d.end) {
		return DeploymentWIP
	}
	return d.outcome
}

// view computes the app at now from its last deployment: state = f(now, events).
func (a *app) view(now time.Time, t timing) view {
	v := a.phase(now, t)
	for i := len(a.deps) - 1; i >= 0; i-- {
		if !now.Before(a.deps[i].begin) {
			v.lastDeploy = a.deps[i]
			break
		}
	}
	if a.override != "" {
		v.state = a.override
	}
	return v
}

func (a *app) phase(now time.Time, t timing) view {
	d := a.last()
	if d == nil {
		return view{state: StateShouldBeDown}
	}
	commit := d.commit
	old := instance{id: d.prevID, state: "UP", deployNum: d.num - 1, commit: commit, created: d.prevStart}
	mine := instance{id: d.instanceID, deployNum: d.num, commit: commit, created: d.begin}
	switch {
	case d.action == ActionUndeploy:
		if now.Before(d.end) {
			// Just after a stop, Clever Cloud still says SHOULD_BE_UP while the
			// instances go down; they still answer meanwhile.
			old.state = "STOPPING"
			return view{state: StateShouldBeUp, locked: true, serving: true, started: d.prevStart, instID: d.prevID, instances: []instance{old}}
		}
		return view{state: StateShouldBeDown}
	case d.fromUp:
		// A restart or redeploy: the old instance serves until the new one is up.
		if now.Before(d.end) {
			inst := []instance{old}
			if !now.Before(d.begin) {
				mine.state = "DEPLOYING"
				inst = append(inst, mine)
			}
			return view{state: StateShouldBeUp, locked: true, serving: true, started: d.prevStart, instID: d.prevID, instances: inst}
		}
		if d.outcome == DeploymentOK {
			mine.state, mine.created = "UP", d.end
			return view{state: StateShouldBeUp, up: true, serving: true, started: d.end, instID: d.instanceID, instances: []instance{mine}}
		}
		return view{state: StateShouldBeUp, up: true, serving: true, started: d.prevStart, instID: d.prevID, instances: []instance{old}}
	}
	switch {
	case now.Before(d.begin):
		// Just after a start, Clever Cloud still says SHOULD_BE_DOWN until the
		// deployment begins.
		return view{state: StateShouldBeDown, locked: true}
	case now.Before(d.end):
		mine.state = "BOOTING"
		if !now.Before(d.begin.Add((d.end.Sub(d.begin)) / 2)) {
			mine.state = "DEPLOYING"
		}
		return view{state: StateWantsToBeUp, locked: true, instances: []instance{mine}}
	case d.outcome == DeploymentOK:
		// "Started" is not "routable": the edge may take a moment more.
		mine.state, mine.created = "UP", d.end
		return view{state: StateShouldBeUp, up: true, serving: !now.Before(d.end.Add(t.edgeDelay)), started: d.end,
			instID: d.instanceID, instances: []instance{mine}}
	case now.Before(d.end.Add(t.stopLinger)):
		// A failed or cancelled start says WANTS_TO_BE_UP for a while, then
		// SHOULD_BE_DOWN.
		return view{state: StateWantsToBeUp}
	}
	return view{state: StateShouldBeDown}
}

// visibleDeployments lists the deployments shown at now, newest first.
func (a *app) visibleDeployments(now time.Time) []*deployment {
	var out []*deployment
	for i := len(a.deps) - 1; i >= 0; i-- {
		if !now.Before(a.deps[i].begin) {
			out = append(out, a.deps[i])
		}
	}
	return out
}

func (a *app) push(d *deployment) {
	a.nextNum++
	d.num = a.nextNum
	d.uuid = "deployment_" + newUUID()
	if d.action == ActionDeploy {
		d.instanceID = newUUID()
	}
	if d.commit == "" {
		d.commit = fakeCommit(d.num)
	}
	a.deps = append(a.deps, d)
	if len(a.deps) > maxDeployments {
		a.deps = append([]*deployment(nil), a.deps[len(a.deps)-maxDeployments:]...)
	}
}

// seed gives a new app the history its initial state implies, so that reading its
// last deployment answers what a real app would.
func (a *app) seed(now time.Time, t timing) {
	if a.NeverDeployed {
		return
	}
	up := now.Add(-2 * time.Hour)
	a.push(&deployment{action: ActionDeploy, asked: up, begin: up, end: up.Add(time.Minute), outcome: DeploymentOK})
	if a.State == StateShouldBeUp {
		return
	}
	// Every other state was stopped an hour ago.
	down := now.Add(-time.Hour)
	first := a.deps[0]
	a.push(&deployment{action: ActionUndeploy, asked: down, begin: down, end: down.Add(time.Minute),
		outcome: DeploymentOK, prevStart: first.end, prevID: first.instanceID})
	if a.State == StateWantsToBeUp {
		// and started again: its deployment begins now.
		a.push(&deployment{action: ActionDeploy, asked: now.Add(-t.deployDelay), begin: now, end: now.Add(t.bootTime), outcome: DeploymentOK})
	}
}

// start applies a start asked at now. restart says the app was up: on Clever Cloud
// such a start redeploys a running app.
func (a *app) start(now time.Time, t timing) (d *deployment, restart bool, err error) {
	v := a.view(now, t)
	switch {
	case a.NeverDeployed:
		return nil, false, ErrNeverDeployed
	case a.override != "":
		return nil, false, ErrModerated
	case v.locked:
		return nil, false, ErrLocked
	}
	d = &deployment{action: ActionDeploy, asked: now, begin: now.Add(t.deployDelay), fromUp: v.up, outcome: DeploymentOK}
	d.end = d.begin.Add(t.bootTime)
	if v.up {
		d.prevStart, d.prevID = v.started, v.instID
	}
	switch {
	case a.failNext:
		d.outcome, d.cause = DeploymentFail, "the deployment failed (FailNextDeployment)"
	case a.cancelNext:
		d.outcome, d.cause = DeploymentCancelled, "the deployment was cancelled (CancelNextDeployment)"
	}
	a.failNext, a.cancelNext = false, false
	a.push(d)
	return d, v.up, nil
}

// stop applies a stop asked at now. A stop of an app that is not up succeeds and
// changes nothing (it returns nil).
func (a *app) stop(now time.Time, t timing) (*deployment, error) {
	v := a.view(now, t)
	switch {
	case a.override != "":
		return nil, ErrModerated
	case v.locked:
		return nil, ErrLocked
	case !v.up:
		return nil, nil
	}
	d := &deployment{action: ActionUndeploy, asked: now, begin: now, end: now.Add(t.stopLinger),
		outcome: DeploymentOK, prevStart: v.started, prevID: v.instID}
	a.push(d)
	return d, nil
}

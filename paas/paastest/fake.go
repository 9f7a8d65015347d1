package paastest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas"
)

// Call is one recorded call to the fake.
type Call struct {
	Op  string // observe, start, stop, deployment
	App string
	At  time.Time
}

// App is the fake's view of one app.
type App struct {
	State           paas.State
	Deployment      *paas.Deployment
	NotShutdownable bool
	// Name is the app's display name, as observations give it.
	Name string
}

// Fake is a paas.Client, paas.DeploymentReader, paas.Watcher, paas.PolicyHinter
// and paas.Meter. By default a start
// makes the app SHOULD_BE_UP at once and a stop SHOULD_BE_DOWN at once; set Manual
// to leave the app WANTS_TO_BE_UP (start) or SHOULD_BE_UP (stop) until the test
// calls SetState.
type Fake struct {
	Manual bool
	// Now reads the clock for deployment dates; nil means time.Now.
	Now func() time.Time

	mu       sync.Mutex
	apps     map[string]*App
	calls    []Call
	errs     map[string][]error // op → errors returned by the next calls
	watchers []func(string)
	hints    map[string]hint
	measures map[string]paas.Measures
	// Started is signalled (non-blocking) on every start call.
	Started chan string
}

var (
	_ paas.Client           = (*Fake)(nil)
	_ paas.DeploymentReader = (*Fake)(nil)
	_ paas.Watcher          = (*Fake)(nil)
	_ paas.PolicyHinter     = (*Fake)(nil)
	_ paas.Meter            = (*Fake)(nil)
)

// SetMeasures sets what Measured returns for the app.
func (f *Fake) SetMeasures(id string, m paas.Measures) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.measures == nil {
		f.measures = map[string]paas.Measures{}
	}
	f.measures[id] = m
}

// Measured implements paas.Meter with what SetMeasures set; nothing by default.
func (f *Fake) Measured(app paas.App) paas.Measures {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.measures[app.ID]
}

type hint struct {
	h   paas.PolicyHint
	err error
}

// SetHint sets what the app says of its own policy (as a container's label
// would), returned by AppPolicy from then on.
func (f *Fake) SetHint(id string, h paas.PolicyHint, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hints == nil {
		f.hints = map[string]hint{}
	}
	f.hints[id] = hint{h, err}
}

// AppPolicy implements paas.PolicyHinter with the hints SetHint set; none by
// default.
func (f *Fake) AppPolicy(app paas.App) (paas.PolicyHint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hints[app.ID]
	return h.h, h.err
}

// New returns a fake knowing the given apps, all SHOULD_BE_DOWN.
func New(ids ...string) *Fake {
	f := &Fake{apps: map[string]*App{}, errs: map[string][]error{}, Started: make(chan string, 1024)}
	for _, id := range ids {
		f.apps[id] = &App{State: paas.StateShouldBeDown}
	}
	return f
}

func (f *Fake) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Set replaces an app's state (the test acting as the platform or its console)
// and notifies watchers.
func (f *Fake) Set(id string, a App) {
	f.mu.Lock()
	cp := a
	f.apps[id] = &cp
	ws := append([]func(string){}, f.watchers...)
	f.mu.Unlock()
	for _, w := range ws {
		w(id)
	}
}

// SetQuietly replaces an app's state without notifying watchers: a change the
// platform does not announce (a crash), seen only by the next observation.
func (f *Fake) SetQuietly(id string, a App) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := a
	f.apps[id] = &cp
}

// FinishStart ends the app's deployment well: SHOULD_BE_UP, deployment OK (the
// platform's side of a start that worked, for Manual fakes).
func (f *Fake) FinishStart(id string) {
	a := f.Get(id)
	a.State = paas.StateShouldBeUp
	if a.Deployment != nil {
		d := *a.Deployment
		d.State = paas.DeploymentOK
		a.Deployment = &d
	}
	f.Set(id, a)
}

// Get returns an app's state.
func (f *Fake) Get(id string) App {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.apps[id]; a != nil {
		return *a
	}
	return App{}
}

// FailNext makes the next call of op ("observe", "start", "stop", "deployment")
// return err; several calls queue several errors.
func (f *Fake) FailNext(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[op] = append(f.errs[op], err)
}

// Calls returns the recorded calls of op ("" for all).
func (f *Fake) Calls(op string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if op == "" || c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls of op were made for app.
func (f *Fake) Count(op, app string) int {
	n := 0
	for _, c := range f.Calls(op) {
		if c.App == app {
			n++
		}
	}
	return n
}

// record notes a call and pops an injected error; it holds f.mu.
func (f *Fake) record(op, id string) (*App, error) {
	f.calls = append(f.calls, Call{Op: op, App: id, At: f.now()})
	if q := f.errs[op]; len(q) > 0 {
		f.errs[op] = q[1:]
		return nil, q[0]
	}
	a := f.apps[id]
	if a == nil {
		return nil, fmt.Errorf("paastest: %s: %w", id, paas.ErrNotFound)
	}
	return a, nil
}

// Observe returns the app's state and last deployment.
func (f *Fake) Observe(_ context.Context, app paas.App) (paas.Observation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.record("observe", app.ID)
	if err != nil {
		return paas.Observation{}, err
	}
	return paas.Observation{State: a.State, Deployment: a.Deployment, NotShutdownable: a.NotShutdownable, Name: a.Name}, nil
}

// LastDeployment returns the app's last deployment.
func (f *Fake) LastDeployment(_ context.Context, app paas.App) (*paas.Deployment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.record("deployment", app.ID)
	if err != nil {
		return nil, err
	}
	return a.Deployment, nil
}

// Start starts the app (at once, unless Manual).
func (f *Fake) Start(_ context.Context, app paas.App) error {
	f.mu.Lock()
	a, err := f.record("start", app.ID)
	if err == nil {
		dep := &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: f.now()}
		a.State, a.Deployment = paas.StateWantsToBeUp, dep
		if !f.Manual {
			a.State, dep.State = paas.StateShouldBeUp, paas.DeploymentOK
		}
	}
	ws := append([]func(string){}, f.watchers...)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case f.Started <- app.ID:
	default:
	}
	for _, w := range ws {
		w(app.ID)
	}
	return nil
}

// Stop stops the app (at once, unless Manual).
func (f *Fake) Stop(_ context.Context, app paas.App) error {
	f.mu.Lock()
	a, err := f.record("stop", app.ID)
	if err == nil && !f.Manual {
		a.State = paas.StateShouldBeDown
		a.Deployment = &paas.Deployment{State: paas.DeploymentOK, Action: "UNDEPLOY", At: f.now()}
	}
	ws := append([]func(string){}, f.watchers...)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	for _, w := range ws {
		w(app.ID)
	}
	return nil
}

// Watch registers changed until ctx ends.
func (f *Fake) Watch(ctx context.Context, changed func(appID string)) {
	f.mu.Lock()
	f.watchers = append(f.watchers, changed)
	idx := len(f.watchers) - 1
	f.mu.Unlock()
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		f.watchers[idx] = func(string) {}
		f.mu.Unlock()
	}()
}

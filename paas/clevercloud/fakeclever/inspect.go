package fakeclever

import "time"

// This file is the reading side of the fake: what tests (and the control
// endpoints) look at, as opposed to what the platform does.

// Calls returns the API calls answered so far (bridge and API hosts), oldest first.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// EdgeCalls returns the requests the edge answered so far, oldest first.
func (f *Fake) EdgeCalls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.edge...)
}

// ResetCalls forgets the calls recorded so far.
func (f *Fake) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.edge = nil, nil
}

func (f *Fake) record(c Call) {
	f.mu.Lock()
	list := &f.calls
	if c.Host == "edge" {
		list = &f.edge
	}
	*list = append(*list, c)
	if len(*list) > maxCalls {
		*list = append([]Call(nil), (*list)[len(*list)-maxCalls/2:]...)
	}
	f.mu.Unlock()
	f.logger.Debug("fakeclever call", "host", c.Host, "method", c.Method, "path", c.Path,
		"app", c.App, "status", c.Status, "fault", c.Fault)
}

// Starts is how many starts (POST …/instances) the API accepted for the app.
func (f *Fake) Starts(appID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.apps[appID]; a != nil {
		return a.starts
	}
	return 0
}

// Restarts is how many of those starts were sent to an app that was up, which
// restarts it on Clever Cloud. reaper must never cause one.
func (f *Fake) Restarts(appID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.apps[appID]; a != nil {
		return a.restarts
	}
	return 0
}

// Status is what the platform shows of one app at the current moment.
type Status struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
	Name  string `json:"name"`
	State string `json:"state"`
	// Deployment is the newest visible deployment; its zero value when none.
	Deployment DeploymentStatus `json:"deployment"`
	// Instances are the states of the app's instances (UP, BOOTING, STOPPING, …).
	Instances []string `json:"instances"`
	// Serving says whether the edge routes requests to the app.
	Serving           bool      `json:"serving"`
	Starts            int       `json:"starts"`
	Restarts          int       `json:"restarts"`
	InstanceStartedAt time.Time `json:"instance_started_at"`
	Domain            string    `json:"domain"`
}

// DeploymentStatus is one deployment as it stands.
type DeploymentStatus struct {
	Num    int       `json:"num"`
	State  string    `json:"state"`
	Action string    `json:"action"`
	Date   time.Time `json:"date"`
	Cause  string    `json:"cause,omitempty"`
}

// App returns the app's status now; ok is false for an unknown app.
func (f *Fake) App(appID string) (st Status, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.apps[appID]
	if a == nil {
		return Status{}, false
	}
	return f.statusLocked(a, f.opts.Now()), true
}

// Apps returns every app's status now, in the order they were added.
func (f *Fake) Apps() []Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.opts.Now()
	out := make([]Status, 0, len(f.order))
	for _, id := range f.order {
		out = append(out, f.statusLocked(f.apps[id], now))
	}
	return out
}

func (f *Fake) statusLocked(a *app, now time.Time) Status {
	v := a.view(now, f.tm)
	st := Status{ID: a.ID, Owner: a.Owner, Name: a.Name, State: v.state, Serving: v.serving,
		Starts: a.starts, Restarts: a.restarts, InstanceStartedAt: v.started, Domain: DefaultDomain(a.ID)}
	if d := v.lastDeploy; d != nil {
		st.Deployment = DeploymentStatus{Num: d.num, State: d.state(now), Action: d.action, Date: d.begin, Cause: d.cause}
	}
	for _, in := range v.instances {
		st.Instances = append(st.Instances, in.state)
	}
	return st
}

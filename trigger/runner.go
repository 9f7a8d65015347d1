package trigger

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Waker wakes an app (or a group) on behalf of a trigger; reaper.Engine's
// WakeFor is one. by names the trigger ("trigger redis-queue"), for the
// history. asked is false when the app is up or waking already (nothing is
// done). It must not block on the wake itself.
type Waker interface {
	WakeFor(ctx context.Context, id, by string) (asked bool, err error)
}

// Observer is told what the triggers do (the metrics implement it): each look
// at a source with its result (ResultWork…), each wake asked, each call to the
// producer endpoint refused with its reason (RefusedUnauthorized…), and the
// end of a trigger's loop on this node (the leader's term ended, or the node
// stops): its failure, if any, is no longer this node's to report.
type Observer interface {
	TriggerChecked(id, result string)
	TriggerFired(id string)
	TriggerRefused(reason string)
	TriggerStopped(id string)
}

// Results of a look, as Observer is told them.
const (
	ResultWork  = "work"
	ResultNone  = "none"
	ResultError = "error"

	RefusedUnauthorized = "unauthorized"
	RefusedRateLimited  = "rate_limited"
)

// Options configure a Runner.
type Options struct {
	Triggers []Config
	Waker    Waker
	Observer Observer // nil: none
	Logger   *slog.Logger
	// Node is this node's id (node.id), named in its views for the admin
	// API's per-node list of the listening triggers.
	Node string
	// HTTP sends the http triggers' GETs; nil: a client with checkTimeout.
	HTTP *http.Client
}

// Runner runs the polling triggers while its Run lasts (on the leader) and the
// listening ones while its Listen lasts (on every node), keeps what each did
// for the admin API, and fires through the Waker. Safe for concurrent use.
type Runner struct {
	opts   Options
	log    *slog.Logger
	states map[string]*state // by trigger id, fixed at New
	order  []string
}

// state is one trigger's: what the admin API shows, and the count of failures
// in a row that its back-off uses.
type state struct {
	mu       sync.Mutex
	view     View
	failures int
	failing  string // the current error, "" when the last look worked
}

// View is a trigger as the admin API and the dashboard show it.
type View struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Wake string `json:"wake"`
	// EverySeconds is the polling interval (0: the trigger does not poll).
	EverySeconds float64 `json:"every_seconds,omitempty"`
	// Running is true while this node runs the trigger: the leader, for the
	// polling ones; every node, for the listening ones (postgres_notify: its
	// LISTEN is being kept, or dialled again) and the producer endpoint's.
	Running     bool       `json:"running"`
	LastCheck   *time.Time `json:"last_check,omitempty"`
	LastFire    *time.Time `json:"last_fire,omitempty"`
	Fires       int64      `json:"fires"`
	Failing     bool       `json:"failing"`
	Failures    int        `json:"failures"` // in a row
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	// Node is the node whose view this is (Options.Node).
	Node string `json:"node,omitempty"`
	// Nodes is, for a listening trigger in the admin API's answer (Merge),
	// each node's own view of it: whether it listens, its fires, its error.
	// The fields above are then the best-informed node's, except Fires (the
	// sum of the nodes') and LastFire (the latest).
	Nodes []NodeView `json:"nodes,omitempty"`
}

// NodeView is one node's view of a listening trigger.
type NodeView struct {
	Node string `json:"node"`
	// Listening is true while the node keeps the trigger's LISTEN (or dials
	// it again after a failure: then Failing).
	Listening bool       `json:"listening"`
	LastCheck *time.Time `json:"last_check,omitempty"`
	LastFire  *time.Time `json:"last_fire,omitempty"`
	Fires     int64      `json:"fires"`
	Failing   bool       `json:"failing"`
	LastError string     `json:"last_error,omitempty"`
}

// New returns a Runner of opts.Triggers (validated by the configuration).
func New(opts Options) *Runner {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{Timeout: checkTimeout}
	}
	r := &Runner{opts: opts, log: opts.Logger, states: map[string]*state{}}
	for _, c := range opts.Triggers {
		v := View{ID: c.ID, Kind: c.Kind(), Wake: c.Wake, Running: c.Kind() == KindEndpoint, Node: opts.Node}
		if c.Polls() {
			v.EverySeconds = c.EveryOrDefault().Seconds()
		}
		r.states[c.ID] = &state{view: v}
		r.order = append(r.order, c.ID)
	}
	return r
}

// Views returns every trigger as this node knows it, in the file's order.
func (r *Runner) Views() []View {
	out := make([]View, 0, len(r.order))
	for _, id := range r.order {
		st := r.states[id]
		st.mu.Lock()
		out = append(out, st.view)
		st.mu.Unlock()
	}
	return out
}

// Run runs the polling triggers until ctx ends (the leader's term), then
// returns once every loop has.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range r.opts.Triggers {
		c := &r.opts.Triggers[i]
		if c.Polls() {
			st := r.states[c.ID]
			wg.Go(func() { r.running(c, st, func() { r.poll(ctx, c, st) }) })
		}
	}
	wg.Wait()
}

// Listen runs the listening triggers (postgres_notify) until ctx ends, then
// returns once every loop has. Every node of a cluster runs it for its whole
// life, not only the leader: Postgres keeps no NOTIFY that nobody listens to,
// so a NOTIFY sent while the leader changes reaches the others, and their
// wake asks are stored for the leader to act on (Waker). A burst seen by every
// node makes one ask per node, which the store coalesces into one per app.
func (r *Runner) Listen(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range r.opts.Triggers {
		c := &r.opts.Triggers[i]
		if c.PostgresNotify != nil {
			st := r.states[c.ID]
			wg.Go(func() { r.running(c, st, func() { r.listen(ctx, c, st) }) })
		}
	}
	wg.Wait()
}

// running marks st running while loop runs, and tells the Observer when it
// ends. The failures in a row start again at the next run (the new leader's
// source may answer).
func (r *Runner) running(c *Config, st *state, loop func()) {
	st.set(func(v *View) { v.Running = true })
	defer func() {
		st.mu.Lock()
		st.view.Running, st.view.Failing, st.failing, st.failures = false, false, "", 0
		st.mu.Unlock()
		if r.opts.Observer != nil {
			r.opts.Observer.TriggerStopped(c.ID)
		}
	}()
	loop()
}

func (st *state) set(f func(v *View)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f(&st.view)
}

// poll looks at c's source at once, then every c.Every (or its back-off after
// failures), and fires when there is work.
func (r *Runner) poll(ctx context.Context, c *Config, st *state) {
	ck := newChecker(c, r.opts.HTTP)
	defer ck.close()
	every := c.EveryOrDefault()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		work, err := ck.check(cctx, now)
		cancel()
		if ctx.Err() != nil {
			return
		}
		failures := r.looked(c, st, now, work, err)
		if work {
			r.fire(ctx, c, st)
		}
		t.Reset(time.Until(nextCheck(now, every, failures)))
	}
}

// looked records a look at now (err nil: it worked), logs a change of its
// failure (logChange), tells the Observer, and returns the failures in a row.
func (r *Runner) looked(c *Config, st *state, now time.Time, work bool, err error) int {
	msg := ""
	result := ResultNone
	switch {
	case err != nil:
		msg, result = err.Error(), ResultError
	case work:
		result = ResultWork
	}
	if r.opts.Observer != nil {
		r.opts.Observer.TriggerChecked(c.ID, result)
	}
	st.mu.Lock()
	prev := st.failing
	st.failing = msg
	if err != nil {
		st.failures++
		st.view.LastError, st.view.LastErrorAt = msg, &now
	} else {
		st.failures = 0
	}
	st.view.LastCheck = &now
	st.view.Failing, st.view.Failures = err != nil, st.failures
	failures := st.failures
	st.mu.Unlock()
	if logChange(prev, msg) {
		if msg != "" {
			r.log.Warn("a wake trigger cannot look at its source; it keeps trying, and says so once it can (the dashboard shows the last error)",
				"trigger", c.ID, "kind", c.Kind(), "err", msg)
		} else {
			r.log.Info("a wake trigger looks at its source again", "trigger", c.ID, "kind", c.Kind())
		}
	}
	return failures
}

// minFireGap coalesces the fires of one trigger (a burst of NOTIFYs): the
// first asks, the rest find the app waking.
const minFireGap = time.Second

// What a fire did, as the producer endpoint's access line says it.
const (
	outcomeWoken  = "woken"
	outcomeUp     = "already up or waking"
	outcomeRecent = "already waking: this trigger woke it less than a second ago"
)

// fire asks for c.Wake to be woken, named "trigger <id>" in its history;
// asked is false when the app was up or waking already, or the wake was
// refused; outcome says which (outcomeWoken, outcomeUp, outcomeRecent, or
// "refused: " and why).
func (r *Runner) fire(ctx context.Context, c *Config, st *state) (asked bool, outcome string) {
	now := time.Now()
	st.mu.Lock()
	recent := st.view.LastFire != nil && now.Sub(*st.view.LastFire) < minFireGap
	st.mu.Unlock()
	if recent {
		return false, outcomeRecent
	}
	asked, err := r.opts.Waker.WakeFor(ctx, c.Wake, "trigger "+c.ID)
	if err != nil {
		r.log.Warn("a wake trigger's wake was refused", "trigger", c.ID, "wake", c.Wake, "err", err)
		return false, "refused: " + err.Error()
	}
	if !asked {
		return false, outcomeUp
	}
	st.set(func(v *View) { v.LastFire = &now; v.Fires++ })
	if r.opts.Observer != nil {
		r.opts.Observer.TriggerFired(c.ID)
	}
	r.log.Info("a wake trigger found work: waking", "trigger", c.ID, "wake", c.Wake)
	return true, outcomeWoken
}

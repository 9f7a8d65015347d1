package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// One schedule, from a fresh world to its verdicts: traffic and faults together,
// then every fault undone, the cluster left alone until it settles, and what was
// seen collected for the checks.

// convergeBound is how long the cluster may take, once every fault is undone, to
// have one leader and every app's status on every node matching the platform.
const convergeBound = 30 * time.Second

// scheduleResult is one schedule's outcome.
type scheduleResult struct {
	seed       uint64
	err        error // the harness could not run it
	plan       schedule
	injections []injection
	outcomes   map[reqKind]outcome
	checks     []checkResult
	requests   int
	took       time.Duration
}

// runSchedule plans the seed's schedule, runs it in a world of its own and
// checks it.
func runSchedule(ctx context.Context, e *env, number int, seed uint64) scheduleResult {
	began := time.Now()
	res := scheduleResult{seed: seed, plan: newSchedule(seed, e.opts.duration, e.opts.apps)}
	e.progressf("seed %d: starting redis-server, the fake Clever Cloud and %d nodes", seed, clusterSize)
	w, err := newWorld(ctx, e, number)
	if err != nil {
		res.err = err
		return res
	}
	defer w.close()
	e.progressf("seed %d: %d faults and %d requests over %s", seed, len(res.plan.faults), len(res.plan.traffic), res.plan.duration)
	obs := w.play(ctx, res.plan)
	res.injections, res.requests, res.outcomes = obs.injections, len(obs.results), outcomes(obs.results)
	res.checks = check(obs)
	res.took = time.Since(began)
	return res
}

// play runs the schedule in the world and returns what was seen.
func (w *world) play(ctx context.Context, s schedule) *observation {
	ids := make([]string, len(w.apps))
	for i, a := range w.apps {
		ids[i] = a.id
	}
	sampling, stopSampling := context.WithCancel(ctx)
	smp := newSampler(w.fake, ids)
	sampled := make(chan struct{})
	go func() { smp.run(sampling); close(sampled) }()

	t := &traffic{w: w, clients: newClients(w)}
	in := &injector{w: w, t: t}
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { t.run(ctx, start, s.traffic) })
	wg.Go(func() { in.run(ctx, start, s.faults) })
	wg.Wait()
	in.wait()
	t.wait()
	quiet := time.Now()
	w.heal(ctx)
	conv := w.converge(ctx)
	hist := w.history(ctx)
	stopSampling()
	<-sampled
	return &observation{seed: s.seed, start: start, quiet: quiet, end: time.Now(), apps: w.apps,
		results: t.snapshot(), hits: w.hits.snapshot(), calls: w.fake.Calls(), lines: smp.timelines(),
		history: hist, injections: in.injections(), converged: conv}
}

// heal undoes whatever a fault left behind: the API's faults, a cut, a node or
// redis-server that is not running. The injector undoes each fault itself; this
// is the safety net before the convergence is measured.
func (w *world) heal(ctx context.Context) {
	w.fake.ClearFaults()
	if w.net != nil {
		for i := range clusterSize {
			_ = w.net.Heal(i)
		}
	}
	if !w.redis.Running() {
		_ = w.redis.Restart(ctx)
	}
	for i, n := range w.cluster.Nodes {
		if n.P.Exited() {
			if _, err := w.restart(ctx, i); err == nil {
				w.setDown(i, false)
			}
		}
	}
}

// convergence is how the cluster settled after the faults.
type convergence struct {
	ok    bool
	after time.Duration // from the end of the faults and traffic to the first moment all agreed
	last  string        // what disagreed last, when it never settled
}

// converge polls until the cluster has one leader that every node names and every
// node gives every app the status the platform shows, or convergeBound passes.
func (w *world) converge(ctx context.Context) convergence {
	began := time.Now()
	hc := clusterenv.NewClient(2 * time.Second)
	defer hc.CloseIdleConnections()
	var last string
	for {
		last = w.disagreement(ctx, hc)
		if last == "" {
			return convergence{ok: true, after: time.Since(began)}
		}
		if time.Since(began) > convergeBound || !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return convergence{after: time.Since(began), last: last}
		}
	}
}

// disagreement says what keeps the cluster from agreeing now, or "".
func (w *world) disagreement(ctx context.Context, hc *http.Client) string {
	var sts []clusterenv.Status
	for _, n := range w.cluster.Nodes {
		st, err := w.cluster.Status(ctx, n)
		if err != nil {
			return err.Error()
		}
		sts = append(sts, st)
	}
	if _, _, ok := clusterenv.Whole(sts, clusterSize); !ok {
		return fmt.Sprintf("no single leader: %+v", sts)
	}
	var off []string
	for i, a := range w.apps {
		st, _ := w.fake.App(a.id)
		want := platformStatus(st)
		for _, n := range w.cluster.Nodes {
			got, err := clusterenv.AppStatus(ctx, hc, n.Gateway, a.hold)
			if err != nil || got != want {
				off = append(off, fmt.Sprintf("app %d on %s: %s (%v), platform %s", i, n.ID, got, err, st.State))
			}
		}
	}
	return strings.Join(off, "; ")
}

// platformStatus is the status reaper should give an app the platform shows
// so: Up or Down when settled, "(in transition)" otherwise.
func platformStatus(st fakeclever.Status) string {
	s := sample{state: st.State, serving: st.Serving, action: st.Deployment.Action, depl: st.Deployment.State}
	switch {
	case s.up():
		return "Up"
	case st.State == fakeclever.StateShouldBeDown && !st.Serving:
		return "Down"
	}
	return "(in transition: " + st.State + ")"
}

// transition is one entry of an app's history (GET /api/apps/{id}/history).
type transition struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Cause string    `json:"cause"`
	At    time.Time `json:"at"`
}

// history reads every app's transitions from the first node that answers.
func (w *world) history(ctx context.Context) [][]transition {
	out := make([][]transition, len(w.apps))
	for i, a := range w.apps {
		for _, n := range w.cluster.Nodes {
			var page struct {
				Items []transition `json:"items"`
			}
			if w.cluster.AdminGet(ctx, n, "/api/apps/"+a.id+"/history?page_size=500", &page) == nil {
				out[i] = page.Items
				break
			}
		}
	}
	return out
}

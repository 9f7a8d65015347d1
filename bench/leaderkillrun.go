package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Part H, one run: an app asleep, requests held on a follower, the leader killed,
// the answers, the platform's start calls, the killed node back.

// killRun is one measured run.
type killRun struct {
	host, via        string // the app's host, the follower that held the requests
	killed, elected  string // the leader killed, the leader after
	oldTerm, newTerm uint64
	offset           time.Duration // scheduled: held → kill
	held             time.Duration // first request written → the follower holds them all
	killLate         time.Duration // how late the kill came after its schedule
	phase            string        // where the kill fell against the start call (killPhase)
	landed           bool          // a start reached the platform and was accepted; startAt is then
	startAt          time.Duration // when it reached it, minus the kill (< 0: the dead leader's)
	calls            startCalls
	toAnswers        time.Duration // kill → the last of the answers
	answers          []heldAnswer
	rejoin           time.Duration // the killed node restarted → the cluster whole again
}

// ok counts the answers that are the app's own 200.
func (r killRun) ok() int {
	n := 0
	for _, a := range r.answers {
		if a.appOK && a.err == nil {
			n++
		}
	}
	return n
}

// lost reports a lost wake: an answer that is not the app's, or no start.
func (r killRun) lost() bool { return r.ok() < len(r.answers) || r.calls.accepted == 0 }

// double reports a wake started twice at the platform, or a start sent to the
// app while it was up (a restart on Clever Cloud).
func (r killRun) double() bool { return r.calls.accepted > 1 || r.calls.restarts > 0 }

// startCalls is what the platform's call log says of one wake's starts.
type startCalls struct {
	accepted int // start calls the platform accepted (2xx)
	refused  int // those it answered otherwise
	restarts int // accepted while the app was up
}

// readStartCalls counts the start calls (POST …/applications/{app}/instances) of
// app in the platform's call log: those that reached it.
func readStartCalls(calls []fakeclever.Call, app string) startCalls {
	var s startCalls
	for _, c := range calls {
		if !isStartCall(c, app) {
			continue
		}
		if c.Status/100 != 2 {
			s.refused++
			continue
		}
		s.accepted++
		if c.State == fakeclever.StateShouldBeUp {
			s.restarts++
		}
	}
	return s
}

// killRun plays run i: app i asleep, killHeld requests held on a follower, the
// leader killed offset after they are all held, the answers, the platform's start
// calls, the killed node restarted. The warnings and errors the killed process
// logged are counted into warnings.
func (c *benchCluster) killRun(ctx context.Context, i int, offset time.Duration, warnings map[string]int) (killRun, error) {
	app, host := c.apps[i], clusterHost(i)
	lead, term, err := c.WaitWhole(ctx, wholeTimeout)
	if err != nil {
		return killRun{}, err
	}
	if _, err := waitJobLine(ctx, lead.P, msgFirstPass, term, firstPassTimeout); err != nil {
		return killRun{}, err
	}
	followers := c.Others(lead)
	via := followers[i%len(followers)]
	run := killRun{host: host, via: via.ID, killed: lead.ID, oldTerm: term, offset: offset}
	if err := c.checkAsleep(ctx, app, host); err != nil {
		return run, err
	}
	killed, err := c.holdAndKill(ctx, &run, app, via, lead)
	if err != nil {
		return run, err
	}
	c.readKillOutcome(&run, app, killed)

	<-lead.P.Done()
	countProblems(warnings, lead.P)
	return run, c.rejoin(ctx, &run, lead)
}

// holdAndKill sends killHeld requests for app through via, waits until via holds
// them all, kills the leader run.offset later, and returns when every request
// has its answer (in run.answers), with the time of the kill. Each request ends
// by the fail timeout (a 504) or the run's deadline; on an error, they are given
// up (cancel runs before wg.Wait).
func (c *benchCluster) holdAndKill(ctx context.Context, run *killRun, app string, via, lead *clusterenv.Node) (time.Time, error) {
	var wg sync.WaitGroup
	defer wg.Wait()
	rctx, cancel := context.WithTimeout(ctx, killFailTimeout+10*time.Second)
	defer cancel()
	hc := clusterenv.NewClient(0)
	defer hc.CloseIdleConnections()
	written := make(chan time.Time, killHeld)
	run.answers = make([]heldAnswer, killHeld)
	ended := make(chan struct{}, killHeld)
	for k := range killHeld {
		wg.Go(func() {
			run.answers[k] = holdRequest(rctx, hc, via.Gateway, run.host, app, written)
			ended <- struct{}{}
		})
	}
	var first time.Time
	select {
	case first = <-written:
	case <-ended:
		cancel()
		wg.Wait()
		return time.Time{}, fmt.Errorf("bench: a request for %s through %s ended before it was written: %v", run.host, via.ID, firstErr(run.answers))
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	heldAt, err := c.waitHeld(ctx, via, app, killHeld, ended)
	if err != nil {
		cancel()
		wg.Wait()
		return time.Time{}, fmt.Errorf("%s through %s: %w (answers: %v)", run.host, via.ID, err, firstErr(run.answers))
	}
	run.held = heldAt.Sub(first)

	// The fault: a fixed delay of the schedule, not a wait for a condition.
	if !clusterenv.SleepCtx(ctx, time.Until(heldAt.Add(run.offset))) {
		return time.Time{}, ctx.Err()
	}
	killed := time.Now()
	run.killLate = killed.Sub(heldAt.Add(run.offset))
	if err := lead.P.Signal(syscall.SIGKILL); err != nil {
		return time.Time{}, fmt.Errorf("bench: kill -9 %s: %w", lead.ID, err)
	}
	wg.Wait()
	return killed, nil
}

// readKillOutcome fills in what the kill led to: the time from the kill to the
// last answer, the platform's start calls for app, and when the start landed
// against the kill.
func (c *benchCluster) readKillOutcome(run *killRun, app string, killed time.Time) {
	last := killed
	for _, a := range run.answers {
		if a.at.After(last) {
			last = a.at
		}
	}
	run.toAnswers = last.Sub(killed)
	run.calls = readStartCalls(c.fake.Calls(), app)
	starts := c.api.startsOf(app)
	run.phase = killPhase(starts, killed)
	for _, st := range starts {
		if !st.landed.IsZero() && st.status/100 == 2 {
			run.landed, run.startAt = true, st.landed.Sub(killed)
			break
		}
	}
}

// rejoin restarts the killed node and waits until the cluster is whole again:
// how long that took, and who leads in which term.
func (c *benchCluster) rejoin(ctx context.Context, run *killRun, killed *clusterenv.Node) error {
	restarted := time.Now()
	if err := c.Spawn(killed); err != nil {
		return err
	}
	if err := c.WaitServing(ctx, killed); err != nil {
		return err
	}
	now, newTerm, err := c.WaitWhole(ctx, wholeTimeout)
	if err != nil {
		return err
	}
	run.rejoin = time.Since(restarted)
	run.elected, run.newTerm = now.ID, newTerm
	return nil
}

// checkAsleep fails unless the app is asleep: stopped and never started at the
// platform, and Down on every node.
func (c *benchCluster) checkAsleep(ctx context.Context, app, host string) error {
	st, ok := c.fake.App(app)
	if !ok || st.State != fakeclever.StateShouldBeDown || st.Starts != 0 {
		return fmt.Errorf("bench: %s is not asleep at the platform: %s, %d starts", host, st.State, st.Starts)
	}
	return c.WaitAllStatus(ctx, []string{host}, "Down", wholeTimeout)
}

// waitHeld polls n's admin API until it holds want requests for app, and returns
// when it first said so. A request that ends first (ended) is an error.
func (c *benchCluster) waitHeld(ctx context.Context, n *clusterenv.Node, app string, want int, ended <-chan struct{}) (time.Time, error) {
	deadline := time.Now().Add(heldSeenTimeout)
	var v struct {
		Held   int    `json:"held"`
		Status string `json:"status"`
	}
	for {
		if err := c.AdminGet(ctx, n, "/api/apps/"+app, &v); err != nil {
			return time.Time{}, err
		}
		if v.Held >= want {
			return time.Now(), nil
		}
		select {
		case <-ended:
			return time.Time{}, errors.New("a request was answered before the follower held them all")
		default:
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("bench: %s holds %d requests after %s, want %d (status %s)", n.ID, v.Held, heldSeenTimeout, want, v.Status)
		}
		if !clusterenv.SleepCtx(ctx, heldPoll) { // poll interval
			return time.Time{}, ctx.Err()
		}
	}
}

// firstErr returns the first answer's error, or nil.
func firstErr(as []heldAnswer) error {
	for _, a := range as {
		if a.err != nil {
			return a.err
		}
	}
	return nil
}

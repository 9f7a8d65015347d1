package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part G, the leader failover: kill -9 the leader, time the new leader from the
// survivors' /api/cluster and their JSON logs, restart the killed node.

const (
	// failoverTimeout bounds the wait for the new leader after a kill.
	failoverTimeout = 20 * time.Second
	// firstPassTimeout bounds the wait for a leader's first pass before it is killed.
	firstPassTimeout = 20 * time.Second
)

// The job's log lines (reaper/job.go).
const (
	msgJobRunning = "job running: this node decides for the apps"
	msgFirstPass  = "job: first pass done"
)

// jobLine is one of the job's log lines.
type jobLine struct {
	Time time.Time `json:"time"`
	Msg  string    `json:"msg"`
	Term uint64    `json:"term"`
	Took int64     `json:"took"` // nanoseconds (slog writes a Duration as an integer)
}

// parseJobLine parses line if it carries msg with a term of at least minTerm.
func parseJobLine(line, msg string, minTerm uint64) (jobLine, bool) {
	if !strings.Contains(line, msg) {
		return jobLine{}, false
	}
	var l jobLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Msg != msg || l.Term < minTerm || l.Time.IsZero() {
		return jobLine{}, false
	}
	return l, true
}

// waitJobLine waits for msg with a term of at least minTerm in p's log.
func waitJobLine(ctx context.Context, p *clusterenv.Process, msg string, minTerm uint64, timeout time.Duration) (jobLine, error) {
	var found jobLine
	_, err := p.Log.WaitFor(ctx, timeout, func(line string) bool {
		l, ok := parseJobLine(line, msg, minTerm)
		if ok {
			found = l
		}
		return ok
	})
	if err != nil {
		return jobLine{}, p.Failure(fmt.Sprintf("did not log %q for term %d or later: %v", msg, minTerm, err))
	}
	return found, nil
}

// failover is one measured leader failover.
type failover struct {
	killed, elected   string // node ids
	apiNamed          string // the leader /api/cluster named first (elected, unless a second election followed)
	oldTerm, newTerm  uint64
	api               time.Duration // kill → a survivor's /api/cluster names the new leader
	running           time.Duration // kill → the new leader's "job running" line
	firstPass         time.Duration // kill → its "job: first pass done" line
	took              time.Duration // the first pass itself, as the line says
	restart, rejoined time.Duration // the killed node serving again; the cluster whole again
}

// failoverRound waits for a whole cluster whose leader has done its first pass,
// kills the leader, measures, and restarts the killed node.
func (c *benchCluster) failoverRound(ctx context.Context) (failover, error) {
	began := time.Now()
	lead, term, err := c.WaitWhole(ctx, wholeTimeout)
	if err != nil {
		return failover{}, err
	}
	if _, err := waitJobLine(ctx, lead.P, msgFirstPass, term, firstPassTimeout); err != nil {
		return failover{}, err
	}
	f := failover{killed: lead.ID, oldTerm: term}
	survivors := c.Others(lead)

	killed := time.Now()
	if err := lead.P.Signal(syscall.SIGKILL); err != nil {
		return f, fmt.Errorf("bench: kill -9 %s: %w", lead.ID, err)
	}
	apiCh := make(chan apiLeader, 1)
	go func() { apiCh <- c.pollNewLeader(ctx, survivors, lead.ID, failoverTimeout) }()
	done, who, err := waitAnyJobLine(ctx, survivors, msgFirstPass, term+1, failoverTimeout)
	api := <-apiCh
	if err != nil {
		return f, err
	}
	if api.err != nil {
		return f, api.err
	}
	running, err := waitJobLine(ctx, who.P, msgJobRunning, done.Term, time.Second)
	if err != nil {
		return f, err
	}
	f.elected, f.newTerm = who.ID, done.Term
	// killed carries a monotonic reading, the lines do not: Sub uses the wall
	// clocks, the same machine's.
	f.api, f.running, f.firstPass = api.at.Sub(killed), running.Time.Sub(killed), done.Time.Sub(killed)
	f.took = time.Duration(done.Took)
	f.apiNamed = api.id

	<-lead.P.Done()
	restarted := time.Now()
	if err := c.Spawn(lead); err != nil {
		return f, err
	}
	if err := c.WaitServing(ctx, lead); err != nil {
		return f, err
	}
	f.restart = time.Since(restarted)
	if _, _, err := c.WaitWhole(ctx, wholeTimeout); err != nil {
		return f, err
	}
	f.rejoined = time.Since(restarted)
	c.e.progressf("G:   killed %s (term %d) → %s leads (term %d): first pass done %s after the kill; round took %s",
		f.killed, f.oldTerm, f.elected, f.newTerm, millis(f.firstPass), time.Since(began).Round(100*time.Millisecond))
	return f, nil
}

// apiLeader is the first new leader a survivor's /api/cluster named.
type apiLeader struct {
	id  string
	at  time.Time
	err error
}

// pollNewLeader polls the nodes' /api/cluster until one names a leader other than
// old, and says when the answer came.
func (c *benchCluster) pollNewLeader(ctx context.Context, nodes []*clusterenv.Node, old string, timeout time.Duration) apiLeader {
	deadline := time.Now().Add(timeout)
	for {
		for _, n := range nodes {
			st, err := c.Status(ctx, n)
			if err == nil && st.LeaderID != "" && st.LeaderID != old {
				return apiLeader{id: st.LeaderID, at: time.Now()}
			}
		}
		if time.Now().After(deadline) {
			return apiLeader{err: fmt.Errorf("bench: no survivor's /api/cluster named a new leader within %s of the kill", timeout)}
		}
		if !clusterenv.SleepCtx(ctx, 5*time.Millisecond) { // poll interval: the resolution of the figure
			return apiLeader{err: ctx.Err()}
		}
	}
}

// waitAnyJobLine waits for msg with a term of at least minTerm in the log of any
// of nodes, and returns the first found with its node.
func waitAnyJobLine(ctx context.Context, nodes []*clusterenv.Node, msg string, minTerm uint64, timeout time.Duration) (jobLine, *clusterenv.Node, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type found struct {
		l   jobLine
		n   *clusterenv.Node
		err error
	}
	ch := make(chan found, len(nodes))
	for _, n := range nodes {
		go func() {
			l, err := waitJobLine(ctx, n.P, msg, minTerm, timeout)
			ch <- found{l, n, err}
		}()
	}
	var errs []error
	for range nodes {
		f := <-ch
		if f.err == nil {
			return f.l, f.n, nil
		}
		errs = append(errs, f.err)
	}
	return jobLine{}, nil, errors.Join(errs...)
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/leader"
)

// Part I: leader churn under CPU load (issue 20, item 10). Two clusters of three
// reaper nodes run side by side on loopback, one with the Raft timeouts reaper
// had before (heartbeat and election 500 ms, lease 250 ms), one with today's
// defaults, while another process keeps busy loops on every core
// (clusterenv.BurnEnv: the bench's own binary, started again). Each cluster serves an awake app
// throughout (a request every 50 ms through a node's gateway), and the bench
// counts the leaders each cluster elects in a fixed window: every "this node is
// the leader" line of its nodes, and the Raft terms it went through. Both
// clusters meet the same load at the same time, so the two figures compare.

// oldTimeouts are the Raft timeouts of reaper before issue 20, not configurable then.
var oldTimeouts = clusterenv.ClusterConfig{HeartbeatTimeout: "500ms", ElectionTimeout: "500ms", LeaderLeaseTimeout: "250ms"}

// fastFailover gives parts G and H the Raft timeouts their targets were set
// with (issues 5 and 10): 0.5 s, 0.5 s and 0.25 s, a configuration for a
// dedicated machine (docs/cluster.md#raft-timeouts). They time what reaper does
// around an election; with the defaults (2 s), the election alone takes 2–4 s.
func fastFailover(_ *clusterenv.Node, cfg *clusterenv.Config) {
	cfg.Cluster.HeartbeatTimeout = oldTimeouts.HeartbeatTimeout
	cfg.Cluster.ElectionTimeout = oldTimeouts.ElectionTimeout
	cfg.Cluster.LeaderLeaseTimeout = oldTimeouts.LeaderLeaseTimeout
}

// churnNice runs the nodes of part I at a lower priority than the burner: the
// kernel shares a core fairly between busy threads of equal weight, so that
// busy loops alone hardly delay a node; a node at nice +10 (weight 110 against
// 1024) gets about a tenth of a core the burner wants, as on a machine whose
// other work comes first. It still serves its app, slowly.
var churnNice = []string{"nice", "-n", "10"}

// churnBurners is the burner's busy goroutines (each its own thread) per core:
// many runnable threads lengthen the wait of every node's thread for a core.
const churnBurners = 3

// churnTarget: the default timeouts must give no election in the window.
const churnTarget = 0

// churnResult is one cluster's count.
type churnResult struct {
	name               string
	hb, el, lease      time.Duration
	elected            int    // "this node is the leader" lines in the window
	termFrom, termTo   uint64 // the cluster's term at the window's ends (the highest a node reports)
	served, failed     int    // requests to the awake app in the window
	worst              time.Duration
	window             time.Duration
	burners, burnerCPU int
}

func (r churnResult) perHour() float64 {
	return float64(r.elected) / r.window.Hours()
}

func runChurn(ctx context.Context, e *env) ([]verdict, error) {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		fmt.Fprintf(e.out, "\nI. Leader churn under CPU load: SKIPPED: redis-server is not on the PATH; install it: %s\n", clusterenv.RedisInstallHint)
		return nil, errNoRedis
	}
	window := time.Minute
	if e.opts.quick {
		window = 15 * time.Second
	}
	hb, el, lease := leader.Timeouts(0, 0, 0)
	contestants := []churnResult{
		{name: "before (fixed)", hb: 500 * time.Millisecond, el: 500 * time.Millisecond, lease: 250 * time.Millisecond},
		{name: "defaults now", hb: hb, el: el, lease: lease},
	}
	clusters := make([]*benchCluster, len(contestants))
	for i := range contestants {
		timeouts := clusterenv.ClusterConfig{}
		if i == 0 {
			timeouts = oldTimeouts
		}
		e.progressf("I: starting cluster %d/%d (%s: heartbeat %s, election %s, lease %s)", i+1, len(contestants),
			contestants[i].name, contestants[i].hb, contestants[i].el, contestants[i].lease)
		c, err := newBenchCluster(ctx, e, redisBin, clusterSpec{dir: fmt.Sprintf("churn-%d", i), apps: 1, route: clusterRoute,
			prefix: churnNice,
			tweak: func(_ *clusterenv.Node, cfg *clusterenv.Config) {
				cfg.Cluster.HeartbeatTimeout = timeouts.HeartbeatTimeout
				cfg.Cluster.ElectionTimeout = timeouts.ElectionTimeout
				cfg.Cluster.LeaderLeaseTimeout = timeouts.LeaderLeaseTimeout
			}})
		if err != nil {
			return nil, err
		}
		defer c.close()
		clusters[i] = c
	}
	client := clusterenv.NewClient(10 * time.Second)
	for i, c := range clusters {
		if _, _, err := c.WaitWhole(ctx, wholeTimeout); err != nil {
			return nil, fmt.Errorf("cluster %d: %w", i+1, err)
		}
		// Wake the app: the window measures an awake app's traffic.
		if _, err := clusterenv.Get(ctx, client, c.Nodes[0].Gateway, clusterHost(0), nil); err != nil {
			return nil, fmt.Errorf("cluster %d: waking the app: %w", i+1, err)
		}
		if err := c.WaitAllStatus(ctx, []string{clusterHost(0)}, "Up", wholeTimeout); err != nil {
			return nil, fmt.Errorf("cluster %d: %w", i+1, err)
		}
	}

	burners := churnBurners * runtime.NumCPU()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	e.progressf("I: burning %d cores with %d busy goroutines for %s; counting elections", runtime.NumCPU(), burners, window)
	// The burner at the bench's priority, the nodes under churnNice: the same
	// load whoever runs the bench (BurnerArgs would raise a root's burner).
	burner, err := clusterenv.StartProcess(e.clean, "cpu burner", []string{self}, append(os.Environ(), clusterenv.BurnEnv+"="+strconv.Itoa(burners)),
		filepath.Join(e.tmp, "burner.log"))
	if err != nil {
		return nil, err
	}
	results := make([]churnResult, len(contestants))
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Go(func() { results[i] = c.countChurn(ctx, contestants[i], window) })
	}
	wg.Wait()
	burner.Stop()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for i := range results {
		results[i].burners, results[i].burnerCPU = burners, runtime.NumCPU()
	}
	return printI(e.out, results), nil
}

// countChurn sends traffic to the cluster's awake app for window and counts the
// leaders elected meanwhile.
func (c *benchCluster) countChurn(ctx context.Context, r churnResult, window time.Duration) churnResult {
	r.window = window
	elected := func() int {
		n := 0
		for _, node := range c.Nodes {
			n += node.P.Log.CountMsg("leader: this node is the leader", "")
		}
		return n
	}
	before := elected()
	r.termFrom = c.highestTerm(ctx)
	client := clusterenv.NewClient(5 * time.Second)
	end := time.Now().Add(window)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		n := c.Nodes[i%len(c.Nodes)]
		began := time.Now()
		a, err := clusterenv.Get(ctx, client, n.Gateway, clusterHost(0), nil)
		took := time.Since(began)
		r.worst = max(r.worst, took)
		if err == nil && a.Status/100 == 2 {
			r.served++
		} else {
			r.failed++
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	r.elected = elected() - before
	r.termTo = c.highestTerm(ctx)
	return r
}

// highestTerm is the highest term a node of the cluster reports (0 if none answers).
func (c *benchCluster) highestTerm(ctx context.Context) uint64 {
	var t uint64
	for _, n := range c.Nodes {
		if st, err := c.Status(ctx, n); err == nil {
			t = max(t, st.Term)
		}
	}
	return t
}

func printI(w io.Writer, rs []churnResult) []verdict {
	fmt.Fprintf(w, "\nI. Leader churn under CPU load: 2 clusters of 3 reaper nodes side by side (Raft on loopback, a redis-server each),\n")
	fmt.Fprintf(w, "   while another process runs %d busy goroutines on %d cores, the nodes at nice +10 to it; each cluster serves an awake app\n", rs[0].burners, rs[0].burnerCPU)
	fmt.Fprintln(w, "   (a request every 50 ms, through each node's gateway in turn)")
	fmt.Fprintf(w, "   %-15s %9s %9s %7s %9s %8s %14s %14s %10s\n", "timeouts", "heartbeat", "election", "lease", "elected", "terms", "elections/h", "served/failed", "slowest")
	var vs []verdict
	for i, r := range rs {
		fmt.Fprintf(w, "   %-15s %9s %9s %7s %9d %8s %14.0f %14s %10s\n", r.name, r.hb, r.el, r.lease, r.elected,
			fmt.Sprintf("%d→%d", r.termFrom, r.termTo), r.perHour(), fmt.Sprintf("%d/%d", r.served, r.failed), millis(r.worst))
		if i == len(rs)-1 {
			vs = append(vs, verdict{"I", fmt.Sprintf("elections in %s under CPU load, default timeouts", r.window), strconv.Itoa(r.elected),
				"≤ " + strconv.Itoa(churnTarget), r.elected <= churnTarget, ""})
		}
	}
	fmt.Fprintf(w, "   (a window of %s: one election in it is %.0f an hour; the before row is for comparison, with no target)\n", rs[0].window, 1/rs[0].window.Hours())
	return vs
}

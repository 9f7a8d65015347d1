package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part G: a cluster of three reaper nodes (Raft over loopback, a redis-server as
// the Valkey store, the fake Clever Cloud in-process as the platform).
//
//  1. Leader failover: the bench SIGKILLs the leader and takes the time from the
//     kill to the new leader's "job: first pass done" line (the line's own time:
//     same machine, same wall clock), and to the moment a survivor's
//     /api/cluster first names a new leader. The killed node is restarted on its
//     data directory, and the next round waits until the cluster is whole again.
//  2. Ask latency: one request for a sleeping app sent to a follower (hold mode),
//     timed from the moment it is written to the moment the leader's start call
//     (POST …/instances) reaches the fake, which records the arrival of every
//     call. One app per ask, so that each is a fresh wake.
//
// The asks come first, so that the failovers also show that no new leader starts
// an app again: every app must end with exactly one start at the platform.

// Targets of issue 5, item 10.
const (
	targetFailover = 3 * time.Second
	targetAsk      = 20 * time.Millisecond
)

func runCluster(ctx context.Context, e *env) ([]verdict, error) {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		printClusterSkipped(e.out)
		return nil, errNoRedis
	}
	rounds, asks := 5, 20
	if e.opts.quick {
		rounds, asks = 2, 5
	}
	e.progressf("G: starting redis-server, the fake Clever Cloud with %d sleeping apps, and 3 reaper nodes", asks)
	c, err := newBenchCluster(ctx, e, redisBin, clusterSpec{dir: "cluster", apps: asks, route: clusterRoute, tweak: fastFailover})
	if err != nil {
		return nil, err
	}
	defer c.close()
	lead, term, err := c.WaitWhole(ctx, wholeTimeout)
	if err != nil {
		return nil, err
	}
	e.progressf("G: leader %s (term %d); waiting until every node sees the %d apps Down", lead.ID, term, asks)
	if err := c.waitAllDown(ctx, wholeTimeout); err != nil {
		return nil, err
	}

	r := clusterResult{redis: clusterenv.RedisVersion(redisBin), apps: asks, rounds: rounds}
	r.asks, r.leader, err = c.measureAsks(ctx)
	if err != nil {
		return printG(e.out, r), fmt.Errorf("ask latency: %w", err)
	}
	for i := range rounds {
		e.progressf("G: failover %d/%d", i+1, rounds)
		f, err := c.failoverRound(ctx)
		if err != nil {
			return printG(e.out, r), fmt.Errorf("failover %d: %w", i+1, err)
		}
		r.failovers = append(r.failovers, f)
	}
	e.progressf("G: waiting until the last killed node is back in the cluster")
	if _, _, err := c.WaitWhole(ctx, wholeTimeout); err != nil {
		return printG(e.out, r), err
	}
	for _, id := range c.apps {
		r.starts = append(r.starts, c.fake.Starts(id))
		r.restarts += c.fake.Restarts(id)
	}
	r.warnings = map[string]int{}
	for _, n := range c.Nodes {
		countProblems(r.warnings, n.P)
	}
	r.checked = true
	return printG(e.out, r), nil
}

// errNoRedis skips part G: it is not a failure of the bench.
var errNoRedis = errors.New("bench: redis-server is not on the PATH (" + clusterenv.RedisInstallHint + ")")

func printClusterSkipped(w io.Writer) {
	fmt.Fprintf(w, "\nG. Cluster: SKIPPED: redis-server is not on the PATH; install it: %s\n", clusterenv.RedisInstallHint)
	fmt.Fprintln(w, "   (Debian's redis-server, Redis 7, speaks the Valkey protocol; the bench starts its own on a free loopback port)")
}

// clusterResult is everything part G measured; the parts not measured (an error
// came first) are empty.
type clusterResult struct {
	redis     string
	apps      int
	rounds    int
	leader    string // during the asks
	asks      []askResult
	failovers []failover
	checked   bool  // the end of the part was reached: starts and warnings are read
	starts    []int // per app, at the platform
	restarts  int
	warnings  map[string]int // level and message → count, of the nodes' current processes
}

// seconds writes d in seconds with two decimals.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
}

// printG prints part G and returns its verdicts: only for what was measured.
func printG(w io.Writer, r clusterResult) []verdict {
	fmt.Fprintf(w, "\nG. Cluster: 3 reaper nodes (Raft on loopback), redis-server %s as the Valkey store, the fake Clever Cloud in-process\n", r.redis)
	fmt.Fprintf(w, "   %d apps, SHOULD_BE_DOWN at first, routes in hold mode; an app boots %s after a start (+ %s before its deployment),\n", r.apps, clusterBoot, clusterDeployDelay)
	fmt.Fprintln(w, "   and held requests go through 3 s after it is up (the Clever Cloud driver's default ready_delay)")
	var vs []verdict
	if len(r.failovers) > 0 {
		fs := r.failovers
		fmt.Fprintf(w, "\n   1. Leader failover, %d rounds: kill -9 the leader; each time from the kill (the bench's clock; the nodes' log times)\n", len(fs))
		fmt.Fprintf(w, "      %-5s %-7s %-7s %-6s %14s %13s %16s %10s   %s\n", "round", "killed", "leader", "term", "API names it", "job running", "first pass done", "pass took", "killed node back: serving, cluster whole")
		for i, f := range fs {
			note := ""
			if f.apiNamed != f.elected {
				note = fmt.Sprintf(" (the API first named %s)", f.apiNamed)
			}
			fmt.Fprintf(w, "      %-5d %-7s %-7s %-6s %14s %13s %16s %10s   %s, %s%s\n", i+1, f.killed, f.elected, fmt.Sprintf("%d→%d", f.oldTerm, f.newTerm),
				seconds(f.api), seconds(f.running), seconds(f.firstPass), millis(f.took), seconds(f.restart), seconds(f.rejoined), note)
		}
		api := pick2(fs, func(f failover) time.Duration { return f.api })
		first := pick2(fs, func(f failover) time.Duration { return f.firstPass })
		fmt.Fprintf(w, "      kill → a survivor's /api/cluster names the new leader:  median %s, max %s\n", seconds(median(api)), seconds(slices.Max(api)))
		fmt.Fprintf(w, "      kill → the new leader's first pass done:                 median %s, max %s\n", seconds(median(first)), seconds(slices.Max(first)))
		fmt.Fprintln(w, "      (Raft: heartbeat and election timeouts of 500 ms, randomised up to 2×: a follower waits 0.5-1 s before it stands)")
		m := median(first)
		vs = append(vs, verdict{"G", "leader failover: kill -9 → new leader's first pass, median", seconds(m), "≤ " + seconds(targetFailover), m <= targetFailover, ""})
	}
	if len(r.asks) > 0 {
		lat := pick2(r.asks, func(a askResult) time.Duration { return a.latency })
		fmt.Fprintf(w, "\n   2. Ask latency, %d sleeping apps, one request each to a follower (leader %s): request written → the leader's start call at the platform\n", len(r.asks), r.leader)
		fmt.Fprintf(w, "      median %s, p90 %s (min %s, max %s)\n", millis(median(lat)), millis(quantile(lat, 0.9)), millis(slices.Min(lat)), millis(slices.Max(lat)))
		each := make([]string, len(r.asks))
		for i, a := range r.asks {
			each[i] = strconv.FormatFloat(float64(a.latency)/float64(time.Millisecond), 'f', 1, 64) + "@" + a.via
		}
		fmt.Fprintf(w, "      each (ms@follower): %s\n", strings.Join(each, " "))
		ok, totals, problems := 0, []time.Duration{}, []string{}
		for i, a := range r.asks {
			if a.held.appOK && a.held.err == nil {
				ok++
				totals = append(totals, a.held.total)
			} else if len(problems) < 3 {
				problems = append(problems, fmt.Sprintf("%s: %d %v", clusterHost(i), a.held.status, a.held.err))
			}
		}
		fmt.Fprintf(w, "      held requests answered by their app: %d of %d (request → answer, boot included: median %s)\n", ok, len(r.asks), seconds(median(totals)))
		for _, p := range problems {
			fmt.Fprintf(w, "        %s\n", p)
		}
		m := median(lat)
		vs = append(vs,
			verdict{"G", "follower's ask → leader's start call at the platform, median", millis(m), "≤ " + millis(targetAsk), m <= targetAsk, ""},
			verdict{"G", "held requests on followers answered by their app", fmt.Sprintf("%d of %d", ok, len(r.asks)), "all", ok == len(r.asks), ""})
	}
	if r.checked {
		one := 0
		for _, s := range r.starts {
			if s == 1 {
				one++
			}
		}
		fmt.Fprintf(w, "\n   Starts at the platform per app, after the asks and the failovers: %s; restarts %d\n", countsLine(r.starts), r.restarts)
		fmt.Fprintf(w, "   Warnings and errors logged by the nodes' current processes: %s\n", warningsLine(r.warnings))
		vs = append(vs, verdict{"G", "one start per app at the platform (Starts == 1), no restart", fmt.Sprintf("%d of %d", one, len(r.starts)), "all", one == len(r.starts) && r.restarts == 0, ""})
	}
	return vs
}

// countsLine writes how many apps had each number of starts: "1 start × 20 apps".
func countsLine(starts []int) string {
	byCount := map[int]int{}
	for _, s := range starts {
		byCount[s]++
	}
	var keys []int
	for k := range byCount {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d start(s) × %d app(s)", k, byCount[k])
	}
	return strings.Join(parts, ", ")
}

// countProblems counts the warnings and errors p logged, by level and message.
func countProblems(into map[string]int, p *clusterenv.Process) {
	for _, line := range p.Log.Problems() {
		l, _ := clusterenv.ParseJSONLine(line)
		into[l.Level+" "+strconv.Quote(l.Msg)]++
	}
}

// warningsLine writes the count of each warning, most frequent first: `none`, or
// `3× WARN "x", 1× ERROR "y"`.
func warningsLine(ws map[string]int) string {
	if len(ws) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(ws))
	for k := range ws {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ws[a] != ws[b] {
			return ws[b] - ws[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", ws[k], k)
	}
	return strings.Join(parts, ", ")
}

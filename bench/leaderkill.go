package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part H: a leader killed in the middle of a wake (issue 10, item 4). One
// cluster of three nodes for every run, and an app never woken before for each
// (so each run starts from an app asleep at the platform and Down on every
// node, without waiting for one to fall asleep again). A run holds 10 requests
// for its app on a follower, SIGKILLs the leader a seeded moment after the
// follower holds them (0 to 600 ms), and times the kill to the last of the 10
// answers. Every answer must be the app's 200, and exactly one start must have
// reached the platform. The killed node is restarted on its data directory, and
// the next run waits until the cluster is whole again.
//
// Every call to the platform's API takes 100 ms (slowAPI), as a real API's
// would: the leader's start call comes about 200 ms after the requests are held
// and is on its way for 100 ms, so the kills fall before it, while it is sent,
// once the platform has it but before its answer, and after.

// Targets of issue 10, item 4.
const targetKillToAnswers = 5 * time.Second

const (
	killRuns, killRunsQuick = 50, 5
	// killHeld is how many requests each run holds on a follower.
	killHeld = 10
	// killWindow is when the kill falls, after the follower holds the requests.
	killWindow = 600 * time.Millisecond
	// The routes: the fail timeout bounds a lost wake's wait (the held requests
	// get a 504 then); ready_delay as in examples/cluster.
	killFailTimeout = 20 * time.Second
	killReadyDelay  = 500 * time.Millisecond
	// killAPILatency is each platform API call's latency (slowAPI): the leader's
	// start call is on its way for that long, so that kills fall before it, while
	// it is sent, once the platform has it, and after its answer.
	killAPILatency = 100 * time.Millisecond
	// heldSeenTimeout bounds the wait for the follower to hold the requests.
	heldSeenTimeout = 5 * time.Second
	// heldPoll is how often the follower's admin API is asked.
	heldPoll = 5 * time.Millisecond
)

// killRoute is app i's route in part H: hold mode, a long grace period (every
// app is woken once), the fail timeout and ready delay above.
func killRoute(i int, appID, edgeURL string) clusterenv.RouteConfig {
	r := clusterRoute(i, appID, edgeURL)
	c := &r.Plugins[0].Config
	c.FailTimeout, c.ReadyDelay = killFailTimeout.String(), killReadyDelay.String()
	return r
}

// killSchedule returns the delay from "held" to the kill of each of n runs:
// one in each of n equal slices of the window, at a random point of it, in a
// random order, so that the runs cover the window evenly whatever n.
func killSchedule(seed uint64, n int, window time.Duration) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]time.Duration, n)
	for i := range n {
		lo := window * time.Duration(i) / time.Duration(n)
		hi := window * time.Duration(i+1) / time.Duration(n)
		out[i] = lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	rng.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func runLeaderKill(ctx context.Context, e *env) ([]verdict, error) {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		printLeaderKillSkipped(e)
		return nil, errNoRedis
	}
	n := killRuns
	if e.opts.quick {
		n = killRunsQuick
	}
	seed := e.opts.seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	r := killResult{redis: clusterenv.RedisVersion(redisBin), seed: seed, planned: n, schedule: killSchedule(seed, n, killWindow)}
	e.progressf("H: starting redis-server, the fake Clever Cloud with %d sleeping apps, and 3 reaper nodes (seed %d)", n, seed)
	began := time.Now()
	c, err := newBenchCluster(ctx, e, redisBin, clusterSpec{dir: "leaderkill", apps: n, route: killRoute, apiLatency: killAPILatency, tweak: fastFailover})
	if err != nil {
		return nil, err
	}
	defer c.close()
	if _, _, err := c.WaitWhole(ctx, wholeTimeout); err != nil {
		return nil, err
	}
	if err := c.waitAllDown(ctx, wholeTimeout); err != nil {
		return nil, err
	}
	r.setup = time.Since(began)
	r.warnings = map[string]int{}
	done := func() {
		r.took = time.Since(began)
		for _, n := range c.Nodes {
			countProblems(r.warnings, n.P)
		}
	}
	for i := range n {
		run, err := c.killRun(ctx, i, r.schedule[i], r.warnings)
		if err != nil {
			done()
			return printH(e.out, r), fmt.Errorf("run %d: %w", i+1, err)
		}
		r.runs = append(r.runs, run)
		if i == 0 {
			e.progressf("H: %s", killRunHeader)
		}
		e.progressf("H: %s", killRunLine(i+1, run))
	}
	done()
	return printH(e.out, r), nil
}

func printLeaderKillSkipped(e *env) {
	fmt.Fprintf(e.out, "\nH. Leader killed mid-wake: SKIPPED: redis-server is not on the PATH; install it: %s\n", clusterenv.RedisInstallHint)
}

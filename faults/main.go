// Command faults is `make faults`: it runs a reaper cluster — three real nodes
// (bin/reaper), a redis-server as their Valkey store, the fake Clever Cloud in
// this process — through randomized, seeded schedules of faults (nodes killed or
// restarted while they hold requests, the leader killed during a wake,
// redis-server killed and restarted, the platform's API failing, apps crashing,
// nodes cut off the network) while a load generator sends the traffic of real
// clients, then checks invariants computed from what it saw from outside: the
// fake's call log, the apps' own record of the requests that reached them, every
// client's answer, and the nodes' admin API. It ends with a table of the
// schedules, the faults injected by kind, the invariants checked, and every
// violation with the seed that replays its schedule.
//
//	go run ./faults                      # 5 schedules of 40 s, seeds picked at random and printed
//	go run ./faults -n 20                # more
//	go run ./faults -seed 1234           # replay the schedule of seed 1234
//	go run ./faults -seed 1234 -n 3      # seeds 1234, 1235, 1236
//
// The exit status is 0 when no invariant was violated, 1 when one was, 2 when the
// harness itself could not run (a missing binary, a cluster that did not form).
// See docs/reliability.md for what is checked and why.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

func main() {
	clusterenv.BurnIfAsked() // a CPU burst (kindCPUBurst): this binary, started again
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command line.
type options struct {
	seed     uint64 // the first schedule's seed; 0 picks one at random
	n        int    // schedules
	duration time.Duration
	apps     int
	netns    string // auto | off
	keep     bool   // keep the run's directory (configurations, logs)
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "the seed of the first schedule (the next ones take seed+1, seed+2, …); 0 picks one at random")
	n := fs.Int("n", 5, "how many schedules to run")
	duration := fs.Duration("duration", 40*time.Second, "how long each schedule injects faults and sends traffic (at least 10s)")
	apps := fs.Int("apps", 3, "apps behind the cluster (1 to 20)")
	netns := fs.String("netns", "auto", "run each node in a network namespace of its own, for real partitions: auto (when root with ip) or off")
	keep := fs.Bool("keep", false, "keep the directory of the run (configurations, node logs) and print its path")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{seed: *seed, n: *n, duration: *duration, apps: *apps, netns: *netns, keep: *keep}
	switch {
	case o.n < 1:
		return o, errors.New("-n: at least 1")
	case o.duration < 10*time.Second:
		return o, errors.New("-duration: at least 10s (a schedule needs room for a fault and its recovery)")
	case o.apps < 1 || o.apps > 20:
		return o, errors.New("-apps: from 1 to 20")
	case o.netns != "auto" && o.netns != "off":
		return o, fmt.Errorf("-netns: auto or off, not %q", o.netns)
	}
	if o.seed == 0 {
		o.seed = rand.Uint64N(1_000_000) + 1 // short, to type when replaying
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseOptions(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cl := &clusterenv.Cleanups{}
	defer cl.Run()
	e, err := setup(ctx, opts, cl, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 2
	}
	printHeader(e)
	var results []scheduleResult
	for i := range opts.n {
		if ctx.Err() != nil {
			break
		}
		r := runSchedule(ctx, e, i+1, opts.seed+uint64(i))
		printSchedule(e.out, r)
		results = append(results, r)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "faults: interrupted; stopping every process it started")
		return 2
	}
	return printReport(e.out, results, e.net.reason)
}

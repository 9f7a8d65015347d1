// Command bench is `make bench`: it measures reaper against a bare Go reverse proxy
// on loopback, in one run, and prints every figure with the targets of issues 2
// and 3 and a PASS or FAIL for each.
//
//	A. the awake path at 64 keep-alive connections: requests/s and proxy CPU per request
//	B. latency at 1 connection: p50 and p99
//	C. an app that spends 2 ms per request, at 8 connections: requests/s
//	D. the ratios of reaper to the bare proxy, with the targets
//	E. wake latency: from the app's port opening to the held request's answer
//	F. one node holding 10,000 requests for a sleeping app: RSS, one start, every answer
//	F2. the same with issue 10's Python app (listen backlog 5): peak RSS, release included
//	G. a cluster of three nodes: leader failover, and a follower's ask to the leader's start call
//	H. the same cluster's leader killed in the middle of a wake: the time to the held answers, one start
//	I. leader churn: elections under CPU load, Raft timeouts of before and of now side by side
//	T. wake on TCP: a cold Postgres's first answer, a spliced connection's throughput, idle connections' memory
//	J. forward-auth through Caddy: reaper's CPU per auth call, Caddy alone against Caddy asking reaper
//	K. the Kubernetes driver's wake: Deployment ready → held request answered, beside the Docker driver's
//
// Run it from the repository root: `make bench` (which builds bin/reaper and
// bin/demoapp first) or `go run ./bench`. The exit status is 0 when every target
// passes, 1 when one fails, 2 when the bench itself could not measure. See
// bench/README.md for how to read the output.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

func main() {
	clusterenv.BurnIfAsked() // part I's CPU load: this binary, started again by the bench
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// parts are the parts of the bench, in the order they run: the -only name of
// each, its label in the summary, and the error that says it was skipped (a tool
// is missing), if it can be.
var parts = []struct {
	section, label string
	run            func(context.Context, *env) ([]verdict, error)
	skip           error
}{
	{"awake", "A-D", runAwake, nil},
	{"wake", "E", runWake, nil},
	{"held", "F", runHeld, nil},
	{"python", "F2", runHeldPython, errNoPython},
	{"cluster", "G", runCluster, errNoRedis},
	{"leaderkill", "H", runLeaderKill, errNoRedis},
	{"churn", "I", runChurn, errNoRedis},
	{"tcp", "T", runTCP, errNoPostgres},
	{"notify", "W", runNotify, errNoPostgres},
	{"auth", "J", runAuth, errNoCaddy},
	{"kube", "K", runKube, errNoKube},
}

// options are the command line of the bench.
type options struct {
	quick    bool
	sections map[string]bool
	profile  string
	seed     uint64 // part H's kill schedule; 0: from the clock
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "short runs, one round, fewer wakes and held requests: for developing the bench, not for figures")
	var names, described []string
	for _, p := range parts {
		names = append(names, p.section)
		described = append(described, p.section+" ("+p.label+")")
	}
	only := fs.String("only", strings.Join(names, ","), "the parts to run, comma-separated: "+strings.Join(described, ", "))
	profile := fs.String("profile", "", "write a CPU profile of reaper under the 64-connection load of the reaper-plugin route to this `file` (builds a profiling reaper)")
	seed := fs.Uint64("seed", 0, "the seed of part H's kill schedule, to replay one (0: a new one, printed)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{quick: *quick, sections: map[string]bool{}, profile: *profile, seed: *seed}
	for s := range strings.SplitSeq(*only, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(names, s) {
			return options{}, fmt.Errorf("-only: unknown part %q (want one of %s)", s, strings.Join(names, ", "))
		}
		o.sections[s] = true
	}
	return o, nil
}

// env is what every part of the bench shares.
type env struct {
	opts      options
	root      string // the repository root
	tmp       string // removed at the end
	reaperBin string
	demoBin   string
	bareBin   string
	clean     *clusterenv.Cleanups
	out       io.Writer // the report
	progress  io.Writer // what is running now
}

// progressf tells what the bench is doing, on stderr, so a long silence is
// explained.
func (e *env) progressf(format string, a ...any) {
	fmt.Fprintf(e.progress, "bench: "+format+"\n", a...)
}

func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseOptions(args, stderr)
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cl := &clusterenv.Cleanups{}
	defer cl.Run()
	e, err := setup(ctx, opts, cl, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}

	start := time.Now()
	printHeader(e)
	var verdicts []verdict
	var failed, skipped []string
	for _, p := range parts {
		if !opts.sections[p.section] || ctx.Err() != nil {
			continue
		}
		v, err := p.run(ctx, e)
		verdicts = append(verdicts, v...)
		switch {
		case p.skip != nil && errors.Is(err, p.skip):
			skipped = append(skipped, fmt.Sprintf("%-2s %s: %v", p.label, p.section, err))
		case err != nil:
			failed = append(failed, p.label+": "+err.Error())
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "bench: interrupted; stopping every process it started")
		return 2
	}
	fmt.Fprintf(e.out, "\nload average after the run: %s\n", loadAverage())
	return printSummary(e.out, verdicts, failed, skipped, time.Since(start), opts.quick)
}

// setup finds the repository and the binaries, builds the bare proxy, and raises
// the open-file limit (the children inherit it).
func setup(ctx context.Context, opts options, cl *clusterenv.Cleanups, stdout, stderr io.Writer) (*env, error) {
	root, err := clusterenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := raiseFileLimit(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "reaper-bench-")
	if err != nil {
		return nil, err
	}
	cl.Push(func() { os.RemoveAll(tmp) })
	e := &env{opts: opts, root: root, tmp: tmp, clean: cl, out: stdout, progress: stderr}

	build := func(out string, pkgs ...string) error { return clusterenv.Build(ctx, root, out, pkgs...) }
	e.reaperBin = filepath.Join(root, "bin", "reaper")
	e.demoBin = filepath.Join(root, "bin", "demoapp")
	if !clusterenv.IsFile(e.reaperBin) || !clusterenv.IsFile(e.demoBin) {
		// `go run ./bench` without `make build`: build them here, not in bin/.
		e.progressf("bin/reaper or bin/demoapp missing (make bench builds them): building both into %s", tmp)
		e.reaperBin, e.demoBin = filepath.Join(tmp, "reaper"), filepath.Join(tmp, "demoapp")
		if err := build(tmp+string(filepath.Separator), "./cmd/reaper", "./cmd/demoapp"); err != nil {
			return nil, err
		}
	}
	if opts.profile != "" {
		if e.reaperBin, err = buildProfilingReaper(ctx, e, clusterenv.GoCommand()); err != nil {
			return nil, err
		}
	}
	e.bareBin = filepath.Join(tmp, "bareproxy")
	if err := build(e.bareBin, "./bench/bareproxy"); err != nil {
		return nil, err
	}
	return e, nil
}

// raiseFileLimit sets the soft limit of open files to the hard limit: the held
// requests part opens 10,000 client connections, and reaper, started by the bench,
// inherits the limit for its 10,000 server sockets.
func raiseFileLimit() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-file limit: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return fmt.Errorf("raising the open-file limit: %w", err)
		}
	}
	return nil
}

// fileLimit returns the soft limit of open files.
func fileLimit() uint64 {
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	return lim.Cur
}

func printHeader(e *env) {
	version := "unknown"
	if b, err := exec.Command(e.reaperBin, "version").Output(); err == nil {
		version = strings.TrimSpace(string(b))
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(e.out, "reaper bench — %s\n", time.Now().Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintf(e.out, "machine: %d CPUs, linux %s, %s; open-file limit %d\n", runtime.NumCPU(), strings.TrimSpace(string(kernel)), runtime.Version(), fileLimit())
	fmt.Fprintf(e.out, "reaper:  %s (%s)\n", rel(e.root, e.reaperBin), version)
	fmt.Fprintf(e.out, "app:     %s; bare proxy: httputil.ReverseProxy, built into %s\n", rel(e.root, e.demoBin), e.tmp)
	fmt.Fprintf(e.out, "load average before the run: %s (other work on the machine makes every figure noisier)\n", loadAverage())
	fmt.Fprintln(e.out, "All on loopback: the load generator, the proxy and the app share the CPUs.")
	if e.opts.quick {
		fmt.Fprintln(e.out, "QUICK MODE: short runs, one round — for developing the bench; these are not figures to quote.")
	}
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

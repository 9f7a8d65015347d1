package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// env is what every schedule shares.
type env struct {
	opts      options
	root      string // the repository
	tmp       string // the run's directory, removed at the end unless -keep
	reaperBin string
	redisBin  string
	net       netMode
	clean     *clusterenv.Cleanups
	out       io.Writer // the report
	progress  io.Writer // what is running now
}

// progressf tells what the harness is doing, on stderr, so a long silence is
// explained.
func (e *env) progressf(format string, a ...any) {
	fmt.Fprintf(e.progress, "faults: "+format+"\n", a...)
}

// errNoRedis stops the harness: every schedule needs redis-server.
var errNoRedis = fmt.Errorf("redis-server is not on the PATH; install it: %s", clusterenv.RedisInstallHint)

// setup finds the repository, the binaries (building reaper when bin/reaper is
// missing) and redis-server, and decides whether nodes get network namespaces.
func setup(ctx context.Context, opts options, cl *clusterenv.Cleanups, stdout, stderr io.Writer) (*env, error) {
	root, err := clusterenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errNoRedis
	}
	tmp, err := os.MkdirTemp("", "reaper-faults-")
	if err != nil {
		return nil, err
	}
	if opts.keep {
		cl.Push(func() { fmt.Fprintf(stderr, "faults: the run's directory is kept: %s\n", tmp) })
	} else {
		cl.Push(func() { os.RemoveAll(tmp) })
	}
	e := &env{opts: opts, root: root, tmp: tmp, redisBin: redisBin, clean: cl, out: stdout, progress: stderr}
	e.reaperBin = filepath.Join(root, "bin", "reaper")
	if !clusterenv.IsFile(e.reaperBin) {
		// `go run ./faults` without `make build`: build it here, not in bin/.
		e.progressf("bin/reaper missing (make faults builds it): building it into %s", tmp)
		e.reaperBin = filepath.Join(tmp, "reaper")
		if err := clusterenv.Build(ctx, root, e.reaperBin, "./cmd/reaper"); err != nil {
			return nil, err
		}
	}
	e.net = detectNetns(opts.netns)
	return e, nil
}

func printHeader(e *env) {
	version := "unknown"
	if b, err := exec.Command(e.reaperBin, "version").Output(); err == nil {
		version = strings.TrimSpace(string(b))
	}
	fmt.Fprintf(e.out, "reaper faults — %s\n", time.Now().Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintf(e.out, "machine: %d CPUs, %s; reaper %s (%s); redis-server %s\n", runtime.NumCPU(), runtime.Version(),
		rel(e.root, e.reaperBin), version, clusterenv.RedisVersion(e.redisBin))
	fmt.Fprintf(e.out, "cluster: 3 nodes, redis-server with its append-only file, the fake Clever Cloud in process, %d apps\n", e.opts.apps)
	if e.net.on {
		fmt.Fprintln(e.out, "network: each node in a network namespace of its own (ip netns, veth, a bridge): partitions are real")
	} else {
		fmt.Fprintf(e.out, "network: loopback; partitions SKIPPED: %s\n", e.net.reason)
	}
	fmt.Fprintf(e.out, "schedules: %d of %s, seeds %d to %d (replay one: go run ./faults -seed S -n 1)\n",
		e.opts.n, e.opts.duration, e.opts.seed, e.opts.seed+uint64(e.opts.n)-1)
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

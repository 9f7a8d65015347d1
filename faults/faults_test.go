package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/redistest"
)

// The short deterministic subset of `make faults` that `make test` runs: two
// fixed seeds, 15 s each, on loopback (no namespaces, so no partition: the test
// runs as any user), against a reaper built without the race detector.

// shortSeeds are chosen for what their 15 s schedules of 2 apps hold (checked
// below, so that a change of the generator that drops them fails here).
var shortSeeds = []struct {
	seed  uint64
	kinds []faultKind
}{
	{8, []faultKind{kindPaaS429Retry, kindLeaderKill, kindRedis, kindStopAfterWake, kindAppCrash}},
	{7, []faultKind{kindNodeTerm, kindRedis, kindPaaSSlow, kindStopAfterWake, kindAppCrash, kindErrorForced}},
}

const shortDuration = 15 * time.Second

func TestShortSeeds_PlanTheirFaults(t *testing.T) {
	for _, s := range shortSeeds {
		plan := newSchedule(s.seed, shortDuration, 2)
		for _, k := range s.kinds {
			if !slices.ContainsFunc(plan.faults, func(f fault) bool { return f.kind == k }) {
				t.Errorf("seed %d no longer plans %q: pick another seed", s.seed, k)
			}
		}
	}
}

// testEnv builds reaper and returns an environment for schedules on loopback.
func testEnv(t *testing.T, out io.Writer) *env {
	t.Helper()
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatalf("redis-server not installed, and %s=1", redistest.RequireEnv)
		}
		t.Skip("redis-server not installed: " + clusterenv.RedisInstallHint)
	}
	root, err := clusterenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "reaper")
	if err := clusterenv.Build(t.Context(), root, bin, "./cmd/reaper"); err != nil {
		t.Fatal(err)
	}
	cl := &clusterenv.Cleanups{}
	t.Cleanup(cl.Run)
	return &env{opts: options{duration: shortDuration, apps: 2}, root: root, tmp: dir, reaperBin: bin, redisBin: redisBin,
		net: netMode{reason: "the test runs on loopback"}, clean: cl, out: out, progress: io.Discard}
}

func TestFaults_ShortSchedulesViolateNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster for 30 s")
	}
	var out bytes.Buffer
	e := testEnv(t, &out)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for i, s := range shortSeeds {
		r := runSchedule(ctx, e, i+1, s.seed)
		printSchedule(&out, r)
		if r.err != nil {
			t.Fatalf("seed %d: %v\n%s", s.seed, r.err, out.String())
		}
		for _, c := range r.checks {
			for _, v := range c.violations {
				t.Errorf("seed %d: %s: %s", s.seed, c.name, v)
			}
		}
		if r.requests == 0 {
			t.Errorf("seed %d: no request was sent", s.seed)
		}
	}
	t.Log(out.String())
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// The faults of issue 20: redis-server killed in the middle of the leader's
// step of a wake (item 9), and a burst of CPU load on the nodes (item 10). Each
// holds the injector's locks of the faults that would blur what it checks
// (strike): a burst no node fault, so that a new term is the load's doing; a
// kill mid-step no node, redis-server or API fault either, until its probe is
// answered, so that a slow wake is the lock's doing.

// midStepSlow is how long the platform takes to answer each of the first two
// calls about the app of a kindRedisMidStep fault (under driverTimeout): the
// leader's step of the wake waits on it, holding the app's lock, while
// redis-server dies.
const midStepSlow = 1500 * time.Millisecond

// redisMidStep asks a wake of a sleeping app through a follower while the
// platform answers slowly, kills redis-server during the leader's step, brings
// it back once the step's writes and lock release have failed, then asks a wake
// of the app again at once: the probe, which checkWakeAfterStoreBack times.
func (in *injector) redisMidStep(ctx context.Context, inj *injection) {
	f := inj.fault
	lead := in.leader(ctx)
	if lead < 0 {
		inj.skipped = "no leader known"
		return
	}
	if inj.app = in.asleep(ctx, lead, f.app); inj.app < 0 {
		inj.skipped = "no app asleep"
		return
	}
	if lead = in.leader(ctx); lead < 0 {
		inj.skipped = "no leader known"
		return
	}
	in.w.fake.Inject(in.w.apps[inj.app].id, fakeclever.Fault{Kind: fakeclever.FaultSlow, Delay: midStepSlow, Count: 2})
	in.request(ctx, inj.app, (lead+1)%clusterSize)
	sleepUntil(ctx, time.Now().Add(f.after))
	in.w.redis.Kill()
	inj.at = time.Now()
	sleepUntil(ctx, inj.at.Add(f.lasts))
	if err := in.w.redis.Restart(ctx); err != nil {
		inj.failed = "redis-server did not come back: " + err.Error()
		return
	}
	inj.end = time.Now()
	inj.probe = in.request(ctx, inj.app, (lead+2)%clusterSize)
	inj.detail = fmt.Sprintf("app %d: n%d's step of its wake waited on the platform; redis-server killed %s after the request, back %s later; wake %s asked at once",
		inj.app, lead+1, f.after.Round(time.Millisecond), inj.end.Sub(inj.at).Round(100*time.Millisecond), inj.probe)
	// Keep the other faults away until the probe is answered (or late).
	for deadline := inj.end.Add(wakeAfterStoreBound + time.Second); time.Now().Before(deadline); {
		if in.answered(inj.probe) || !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			break
		}
	}
}

// answered reports whether the request id has ended.
func (in *injector) answered(id string) bool {
	for _, r := range in.t.snapshot() {
		if r.id == id {
			return true
		}
	}
	return false
}

// burnersPerCore is the busy goroutines of a CPU burst per core: the load of
// make bench's part I (3 per core, the nodes 10 nice steps below the burner when
// root), under which the default Raft timeouts elected no leader in a minute.
// At 4 per core they elected some (1 in a minute in part I; 2 in a 7.5 s burst
// here, seed 2021).
const burnersPerCore = 3

// burstSettle is how long a burst waits, once no node fault runs, before it
// reads the term and starts: more than checkNoElectionInCPUBurst's margin.
const burstSettle = 4 * time.Second

// cpuBurst runs a CPU burner (this binary again, clusterenv.BurnerArgs) for the
// fault's length and reads the cluster's term before, and a second after: each
// new term is an election.
func (in *injector) cpuBurst(ctx context.Context, inj *injection) {
	n := burnersPerCore * runtime.NumCPU()
	argv, env, err := clusterenv.BurnerArgs(n)
	if err != nil {
		inj.failed = err.Error()
		return
	}
	// A node fault that ended just before (the burst waited for it) may still
	// be calling an election: a node back from a cut disrupts the leader as it
	// rejoins. Let it settle first.
	sleepUntil(ctx, time.Now().Add(burstSettle))
	inj.termBefore = in.term(ctx)
	p, err := clusterenv.StartProcess(in.w.clean, "cpu burner", argv, env, filepath.Join(in.w.dir, fmt.Sprintf("burner-%d.log", inj.fault.at.Milliseconds())))
	if err != nil {
		inj.failed = err.Error()
		return
	}
	inj.at = time.Now()
	sleepUntil(ctx, inj.at.Add(inj.fault.lasts))
	p.Stop()
	inj.end = time.Now()
	sleepUntil(ctx, inj.end.Add(time.Second)) // an election called at the end of the burst shows by then
	inj.termAfter = in.term(ctx)
	inj.detail = fmt.Sprintf("%d busy goroutines (%s) for %s; terms %d→%d", n, argv[0], inj.end.Sub(inj.at).Round(100*time.Millisecond),
		inj.termBefore, inj.termAfter)
}

// term returns the highest Raft term a node that is up reports; 0 if none answers.
func (in *injector) term(ctx context.Context) uint64 {
	var t uint64
	for i, n := range in.w.cluster.Nodes {
		if in.w.isDown(i) {
			continue
		}
		if st, err := in.w.cluster.Status(ctx, n); err == nil {
			t = max(t, st.Term)
		}
	}
	return t
}

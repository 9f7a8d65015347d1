package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// The injector strikes each fault of the schedule at its time, on a goroutine of
// its own, and undoes it when it has lasted: a killed or stopped node is started
// again on its data directory, a cut one reconnected, redis-server restarted on
// its address with its append-only file, the API's faults cleared.

// injection is one fault as it ran.
type injection struct {
	fault   fault
	at, end time.Time // struck; undone (the node serving again, the API healed, …)
	node    int       // the node it hit, or -1
	app     int       // the app it concerned, or -1
	detail  string    // what it found and did
	skipped string    // why it did not strike
	failed  string    // what could not be undone
	refused int       // restarts of the node that exited before serving
	// forced is when an operator's sleep --force was asked (kindErrorForced).
	forced time.Time
	shown  time.Time // kindOperatorKill: when /api/cluster first showed the node unreachable
	// probe is the id of the request the fault sent to see how the cluster
	// recovers (kindRedisMidStep: the wake after the store is back).
	probe string
	// termBefore and termAfter are the cluster's highest Raft term before the
	// fault and after it (kindCPUBurst); 0: no node answered.
	termBefore, termAfter uint64
}

// injector runs a schedule's faults.
type injector struct {
	w  *world
	t  *traffic
	wg sync.WaitGroup
	// nodes is held by a node fault from its strike until it is undone: one node
	// at a time is down or cut off (the schedule plans them so, but a fault may
	// wait for an app to fall asleep before it strikes).
	nodes sync.Mutex
	// outage is held by a fault that kills redis-server until it is back: one
	// outage at a time, so that each one's recovery can be told. api is held by
	// a fault of the platform's API. Issue 20's faults hold what they must not
	// meet (inject20.go). Taken in this order: nodes, outage, api.
	outage, api sync.Mutex

	mu   sync.Mutex
	done []injection
	sent int // requests it sent itself
}

// run strikes every fault at its time and returns once the last has struck (not
// once it is undone: wait does that).
func (in *injector) run(ctx context.Context, start time.Time, faults []fault) {
	for _, f := range faults {
		if !sleepUntil(ctx, start.Add(f.at)) {
			return
		}
		in.wg.Go(func() {
			inj := in.strike(ctx, f)
			in.mu.Lock()
			in.done = append(in.done, inj)
			in.mu.Unlock()
		})
	}
}

// wait waits until every fault struck is undone.
func (in *injector) wait() { in.wg.Wait() }

// injections returns the faults that ran, in the order they struck.
func (in *injector) injections() []injection {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := slices.Clone(in.done)
	slices.SortStableFunc(out, func(a, b injection) int { return cmp.Compare(a.fault.at, b.fault.at) })
	return out
}

// strike runs one fault to its end.
func (in *injector) strike(ctx context.Context, f fault) injection {
	inj := injection{fault: f, at: time.Now(), node: -1, app: -1}
	if slices.Contains(nodeKinds, f.kind) || f.kind == kindOperatorKill || f.kind == kindRedisMidStep || f.kind == kindCPUBurst {
		in.nodes.Lock()
		defer in.nodes.Unlock()
	}
	if f.kind == kindRedis || f.kind == kindRedisMidStep {
		in.outage.Lock()
		defer in.outage.Unlock()
	}
	if slices.Contains(paasKinds, f.kind) || f.kind == kindRedisMidStep {
		in.api.Lock()
		defer in.api.Unlock()
	}
	inj.at = time.Now() // it strikes now, whatever it waited for
	switch f.kind {
	case kindLeaderKill:
		in.leaderKill(ctx, &inj)
	case kindFollowerKill, kindNodeTerm:
		in.holdThenStop(ctx, &inj)
	case kindPartition:
		in.partition(ctx, &inj)
	case kindRedis:
		in.redis(ctx, &inj)
	case kindAppCrash:
		in.appCrash(ctx, &inj)
	case kindStopAfterWake:
		in.stopAfterWake(ctx, &inj)
	case kindErrorForced:
		in.errorForced(ctx, &inj)
	case kindOperatorKill:
		in.operatorKill(ctx, &inj)
	case kindRedisMidStep:
		in.redisMidStep(ctx, &inj)
	case kindCPUBurst:
		in.cpuBurst(ctx, &inj)
	default:
		in.paas(ctx, &inj)
	}
	if inj.end.IsZero() {
		inj.end = time.Now()
	}
	return inj
}

// request sends one request of its own through node, in hold mode, and returns
// its id.
func (in *injector) request(ctx context.Context, app, node int) string {
	in.mu.Lock()
	in.sent++
	id := fmt.Sprintf("f%d", in.sent)
	in.mu.Unlock()
	in.t.send(ctx, planned{id: id, app: app, kind: kindAPIHold, node: node})
	return id
}

// leaderKill sends a request for a sleeping app through a follower, then kills
// the leader a moment later: before, during or after its start call.
func (in *injector) leaderKill(ctx context.Context, inj *injection) {
	f := inj.fault
	lead := in.leader(ctx)
	if lead < 0 {
		inj.skipped = "no leader known"
		return
	}
	inj.app = in.asleep(ctx, lead, f.app)
	if inj.app < 0 {
		inj.app, inj.detail = f.app, "no app asleep; "
	}
	if lead = in.leader(ctx); lead < 0 { // it may have changed while an app fell asleep
		inj.skipped = "no leader known"
		return
	}
	in.request(ctx, inj.app, (lead+1+f.node%2)%clusterSize)
	sleepUntil(ctx, time.Now().Add(f.after))
	inj.detail += fmt.Sprintf("killed n%d %s after a wake of app %d", lead+1, f.after.Round(time.Millisecond), inj.app)
	in.down(ctx, lead, syscall.SIGKILL, inj)
}

// holdThenStop has a node hold requests for a sleeping app, then kills it
// (follower kill) or stops it (SIGTERM, any node).
func (in *injector) holdThenStop(ctx context.Context, inj *injection) {
	f := inj.fault
	node, sig := f.node, syscall.SIGTERM
	if f.kind == kindFollowerKill {
		lead := in.leader(ctx)
		if lead < 0 {
			inj.skipped = "no leader known"
			return
		}
		node, sig = (lead+1+f.node%2)%clusterSize, syscall.SIGKILL
	}
	inj.app = in.asleep(ctx, node, f.app)
	if inj.app < 0 {
		inj.app, inj.detail = f.app, "no app asleep; "
	}
	for range 3 {
		in.request(ctx, inj.app, node)
	}
	held := in.waitHeld(ctx, node, inj.app)
	inj.detail += fmt.Sprintf("n%d held %d request(s) for app %d", node+1, held, inj.app)
	in.down(ctx, node, sig, inj)
}

// down sends sig to node i, waits for its exit, and starts it again once the
// fault has lasted.
func (in *injector) down(ctx context.Context, i int, sig syscall.Signal, inj *injection) {
	w := in.w
	n := w.cluster.Nodes[i]
	inj.node = i
	w.setDown(i, true)
	inj.at = time.Now()
	_ = n.P.Signal(sig)
	select {
	case <-n.P.Done():
	case <-time.After(stopBound):
		inj.failed = fmt.Sprintf("n%d did not exit within %s of %s; killed", i+1, stopBound, sig)
		_ = n.P.Signal(syscall.SIGKILL)
		<-n.P.Done()
	}
	sleepUntil(ctx, inj.at.Add(inj.fault.lasts))
	refused, err := w.restart(ctx, i)
	inj.refused = len(refused)
	if len(refused) > 0 {
		inj.detail += fmt.Sprintf("; %d restart(s) of n%d exited at once (%s)", len(refused), i+1, refused[0])
	}
	if err != nil {
		inj.failed = fmt.Sprintf("n%d did not come back: %v", i+1, err)
		return
	}
	w.setDown(i, false)
	inj.end = time.Now()
}

// stopBound is how long a node may take to exit after SIGTERM: its shutdown
// timeout (2 s) and a margin.
const stopBound = 10 * time.Second

// partition cuts a node off the cluster network for the fault's length.
func (in *injector) partition(ctx context.Context, inj *injection) {
	if in.w.net == nil {
		inj.skipped = "no network namespaces: " + in.w.e.net.reason
		return
	}
	i := inj.fault.node
	inj.node = i
	if err := in.w.net.Cut(i); err != nil {
		inj.failed = err.Error()
		return
	}
	inj.at = time.Now()
	inj.detail = fmt.Sprintf("n%d cut off", i+1)
	sleepUntil(ctx, inj.at.Add(inj.fault.lasts))
	if err := in.w.net.Heal(i); err != nil {
		inj.failed = err.Error()
	}
	inj.end = time.Now()
}

// redis kills redis-server and restarts it on its address once the fault has lasted.
func (in *injector) redis(ctx context.Context, inj *injection) {
	in.w.redis.Kill()
	inj.at = time.Now()
	sleepUntil(ctx, inj.at.Add(inj.fault.lasts))
	if err := in.w.redis.Restart(ctx); err != nil {
		inj.failed = "redis-server did not come back: " + err.Error()
	}
	inj.end = time.Now()
}

// paas makes the platform's API fail for the fault's length.
func (in *injector) paas(ctx context.Context, inj *injection) {
	f := inj.fault
	ff := fakeclever.Fault{}
	switch f.kind {
	case kindPaaS5xx:
		ff.Kind, ff.Status = fakeclever.Fault5xx, f.code
	case kindPaaS429, kindPaaS429Retry:
		ff.Kind, ff.RetryAfter = fakeclever.FaultTooMany429, f.param
	case kindPaaS403:
		ff.Kind = fakeclever.FaultRateLimit403
	case kindPaaSSlow, kindPaaSTimeout:
		ff.Kind, ff.Delay = fakeclever.FaultSlow, f.param
	}
	in.w.fake.Inject("", ff)
	sleepUntil(ctx, inj.at.Add(f.lasts))
	in.w.fake.ClearFaults()
	inj.end = time.Now()
}

// appCrash stops an awake app from outside, as a crash would leave it: the
// fault's app if it is up, else the next one that is. Awake means up for the
// platform and for the leader (an app stopped before reaper saw it up is the
// business of kindStopAfterWake).
func (in *injector) appCrash(ctx context.Context, inj *injection) {
	lead := in.leader(ctx)
	if lead < 0 {
		inj.skipped = "no leader known"
		return
	}
	status := in.statuses(ctx, lead)
	for k := range in.w.apps {
		i := (inj.fault.app + k) % len(in.w.apps)
		if status[in.w.apps[i].id] != "Up" || !in.platformUp(i) {
			continue
		}
		if err := in.w.fake.Console(in.w.apps[i].id).Stop(); err != nil {
			continue
		}
		inj.at, inj.app, inj.detail = time.Now(), i, fmt.Sprintf("app %d stopped from outside", i)
		return
	}
	inj.skipped = "no app awake"
}

// upWait bounds the wait for a woken app to come up.
const upWait = 10 * time.Second

// stopAfterWake wakes a sleeping app through a follower and stops it from
// outside the moment the platform shows it up, before the leader's next look:
// reaper started it, and never sees it up.
func (in *injector) stopAfterWake(ctx context.Context, inj *injection) {
	lead := in.leader(ctx)
	if lead < 0 {
		inj.skipped = "no leader known"
		return
	}
	if inj.app = in.asleep(ctx, lead, inj.fault.app); inj.app < 0 {
		inj.skipped = "no app asleep"
		return
	}
	in.request(ctx, inj.app, (lead+1)%clusterSize)
	woken := time.Now()
	for !in.platformUp(inj.app) {
		if time.Since(woken) > upWait || !sleepUntil(ctx, time.Now().Add(10*time.Millisecond)) {
			inj.skipped = fmt.Sprintf("app %d did not come up within %s of its wake", inj.app, upWait)
			return
		}
	}
	if err := in.w.fake.Console(in.w.apps[inj.app].id).Stop(); err != nil {
		inj.failed = err.Error()
		return
	}
	inj.at, inj.detail = time.Now(), fmt.Sprintf("app %d woken, stopped from outside %s later, as soon as it was up",
		inj.app, time.Since(woken).Round(10*time.Millisecond))
}

// errorWait bounds the wait for an app whose start fails to go to Error: its
// failed deployment shows after the boot time.
const errorWait = 10 * time.Second

// errorForced makes a sleeping app's next deployment fail and wakes it through a
// follower: it goes to Error. It leaves it there for the fault's length, then
// puts it to sleep through a node's admin API as an operator's sleep --force
// does, the only way to stop an app in Error while the nodes run. at is when
// the app was seen in Error, forced when the sleep was asked, end when the app
// was seen Down.
func (in *injector) errorForced(ctx context.Context, inj *injection) {
	lead := in.leader(ctx)
	if lead < 0 {
		inj.skipped = "no leader known"
		return
	}
	if inj.app = in.asleep(ctx, lead, inj.fault.app); inj.app < 0 {
		inj.skipped = "no app asleep"
		return
	}
	id := in.w.apps[inj.app].id
	if err := in.w.fake.Console(id).FailNextDeployment(); err != nil {
		inj.failed = err.Error()
		return
	}
	in.request(ctx, inj.app, (lead+1)%clusterSize)
	woken := time.Now()
	if !in.waitStatus(ctx, lead, inj.app, "Error", errorWait) {
		inj.skipped = fmt.Sprintf("app %d did not go to Error within %s of its wake", inj.app, errorWait)
		return
	}
	inj.at = time.Now()
	sleepUntil(ctx, inj.at.Add(inj.fault.lasts))
	node := in.w.pickNode(inj.fault.node)
	if node < 0 {
		inj.failed = "no node up to ask"
		return
	}
	inj.forced = time.Now()
	code, body, err := in.w.cluster.AdminPost(ctx, in.w.cluster.Nodes[node], "/api/apps/"+id+"/_sleep?force=true", `{"by": "faults"}`)
	if err != nil || code != 202 {
		inj.failed = fmt.Sprintf("sleep --force through n%d: %d %.200s %v", node+1, code, body, err)
		return
	}
	// Stopped: Down, or already woken again by a request that waits.
	if !in.waitStatus(ctx, lead, inj.app, "", forcedBound) {
		inj.failed = fmt.Sprintf("app %d still in Error or going to sleep %s after sleep --force through n%d", inj.app, forcedBound, node+1)
		return
	}
	inj.end = time.Now()
	inj.detail = fmt.Sprintf("app %d in Error %s after its wake, forced to sleep through n%d, stopped %s later",
		inj.app, inj.at.Sub(woken).Round(10*time.Millisecond), node+1, inj.end.Sub(inj.forced).Round(10*time.Millisecond))
}

// waitStatus waits until node i (or the next one up, should a fault take it
// down meanwhile) says the app has the status ("": one past a forced stop, Down
// or later); false when it did not within limit.
func (in *injector) waitStatus(ctx context.Context, i, app int, status string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	has := func(st string) bool {
		if status == "" {
			return st != "" && st != "Error" && st != "WaitingForShutdown"
		}
		return st == status
	}
	for n := i; n < 0 || !has(in.statuses(ctx, n)[in.w.apps[app].id]); n = in.w.pickNode(i) {
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(50*time.Millisecond)) {
			return false
		}
	}
	return true
}

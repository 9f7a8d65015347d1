package main

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"time"

	"github.com/reapergw/reaper/bench/load"
	"github.com/reapergw/reaper/bench/procfs"
	"github.com/reapergw/reaper/internal/clusterenv"
)

// Parts A to D: the awake path. One reaper runs two demo apps with the process
// driver: "fast" (answers at once) and "slow" (2 ms per request). Each app has a
// plain route and a route with the reaper plugin; both apps are woken through the
// plugin route before anything is measured, so the plugin sees them Up. Every
// contestant reaches the same app process: direct, through a bare
// httputil.ReverseProxy, through reaper's plain route, through its plugin route.

// Contestant keys, in their base order.
const (
	kDirect = "direct"
	kBare   = "bare"
	kPlain  = "plain"
	kPlugin = "plugin"
)

var contestantKeys = []string{kDirect, kBare, kPlain, kPlugin}

var contestantNames = map[string]string{
	kDirect: "direct (no proxy)",
	kBare:   "bare ReverseProxy",
	kPlain:  "reaper, plain route",
	kPlugin: "reaper, reaper plugin",
}

// contestant is one way to reach an app.
type contestant struct {
	key    string
	addr   string // where the load generator connects
	host   string // the Host header
	cpuPid int    // the proxy process; 0 for direct
}

// runSpec is one kind of run.
type runSpec struct {
	conns            int
	warmup, duration time.Duration
	rounds           int
}

// awakeSpecs returns the runs of parts A, B and C. More, shorter rounds pair the
// contestants better against background load that drifts on a shared machine.
func awakeSpecs(quick bool) (a, b, c runSpec) {
	if quick {
		return runSpec{64, 300 * time.Millisecond, time.Second, 1},
			runSpec{1, 200 * time.Millisecond, time.Second, 1},
			runSpec{8, 200 * time.Millisecond, time.Second, 1}
	}
	return runSpec{64, 700 * time.Millisecond, 3 * time.Second, 4},
		runSpec{1, 200 * time.Millisecond, 600 * time.Millisecond, 10},
		runSpec{8, 300 * time.Millisecond, 1200 * time.Millisecond, 8}
}

// sample is what one run measured.
type sample struct {
	res       load.Result
	cpuPerReq time.Duration // the proxy's CPU time per answer; 0 for direct
	appConns  int           // connections open to the app at the end of the window
	appClosed int           // connections to the app that closed during the window
}

func (s sample) rps() float64       { return s.res.RPS() }
func (s sample) p50() time.Duration { return s.res.Latency.Quantile(0.50) }
func (s sample) p99() time.Duration { return s.res.Latency.Quantile(0.99) }

// samples are the runs of one part, by contestant key.
type samples map[string][]sample

// roundOrder returns the contestants' order in round r: rotated by r, reversed
// in odd rounds, so no contestant always runs first or right after another.
func roundOrder(keys []string, r int) []string {
	n := len(keys)
	out := make([]string, n)
	for i := range n {
		out[i] = keys[(i+r)%n]
	}
	if r%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// awakeSetup is what parts A to D run against.
type awakeSetup struct {
	node      *reaperNode
	fast      map[string]contestant
	slow      map[string]contestant
	fastApp   netip.AddrPort
	slowApp   netip.AddrPort
	fastPID   int
	slowPID   int
	wakeTimes [2]time.Duration
}

func setupAwake(ctx context.Context, e *env) (*awakeSetup, error) {
	fastAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	slowAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := awakeConfig(e.demoBin, fastAddr, slowAddr)
	e.progressf("A-D: starting reaper with two demo apps (fast, and 2 ms per request)")
	node, err := startReaper(ctx, e, "awake", cfg)
	if err != nil {
		return nil, err
	}
	s := &awakeSetup{node: node, fastApp: netip.MustParseAddrPort(fastAddr), slowApp: netip.MustParseAddrPort(slowAddr)}

	// Wake both apps through the plugin route: the first request is held until
	// the process driver has started the app and seen its port open.
	c := clusterenv.NewClient(30 * time.Second)
	defer c.CloseIdleConnections()
	for i, app := range []struct {
		host string
		pid  *int
	}{{"bench.test", &s.fastPID}, {"bench-slow.test", &s.slowPID}} {
		t0 := time.Now()
		info, _, err := getApp(ctx, c, node.gateway, app.host)
		if err != nil {
			return nil, fmt.Errorf("waking the app behind %s: %w", app.host, err)
		}
		s.wakeTimes[i] = time.Since(t0)
		*app.pid = info.PID
	}

	bareFast, err := startBare(ctx, e, "fast", fastAddr)
	if err != nil {
		return nil, err
	}
	bareSlow, err := startBare(ctx, e, "slow", slowAddr)
	if err != nil {
		return nil, err
	}
	rp := node.PID()
	s.fast = map[string]contestant{
		kDirect: {kDirect, fastAddr, "fast.test", 0},
		kBare:   {kBare, bareFast.addr, "bench.test", bareFast.PID()},
		kPlain:  {kPlain, node.gateway, "plain.test", rp},
		kPlugin: {kPlugin, node.gateway, "bench.test", rp},
	}
	s.slow = map[string]contestant{
		kDirect: {kDirect, slowAddr, "slow.test", 0},
		kBare:   {kBare, bareSlow.addr, "bench-slow.test", bareSlow.PID()},
		kPlain:  {kPlain, node.gateway, "plain-slow.test", rp},
		kPlugin: {kPlugin, node.gateway, "bench-slow.test", rp},
	}
	// Every contestant must reach the same process, and the plugin route must
	// pass the request on (the app is Up).
	for _, set := range []struct {
		m   map[string]contestant
		pid int
	}{{s.fast, s.fastPID}, {s.slow, s.slowPID}} {
		for _, k := range contestantKeys {
			ct := set.m[k]
			info, _, err := getApp(ctx, c, ct.addr, ct.host)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", contestantNames[k], err)
			}
			if info.PID != set.pid {
				return nil, fmt.Errorf("%s reached pid %d, want the app's %d", contestantNames[k], info.PID, set.pid)
			}
		}
	}
	return s, nil
}

// awakeConfig is the reaper of parts A to D.
func awakeConfig(demoBin, fastAddr, slowAddr string) clusterenv.Config {
	plugin := clusterenv.ReaperPluginConfig{GracePeriod: "1h", APIBehavior: "hold", FailTimeout: "60s"}
	fastPlugin, slowPlugin := plugin, plugin
	fastPlugin.AppID, slowPlugin.AppID = "fast", "slow"
	return clusterenv.Config{
		Node: newNodeConfig("bench-awake"),
		PaaS: clusterenv.PaaSConfig{Driver: "process", Apps: []clusterenv.AppConfig{
			demoApp(demoBin, "fast", fastAddr),
			demoApp(demoBin, "slow", slowAddr, "--latency", "2ms"),
		}},
		Routes: []clusterenv.RouteConfig{
			plainRoute("plain", "plain.test", fastAddr),
			reaperRoute("bench", "bench.test", fastAddr, fastPlugin),
			plainRoute("plain-slow", "plain-slow.test", slowAddr),
			reaperRoute("bench-slow", "bench-slow.test", slowAddr, slowPlugin),
		},
	}
}

// bareProxy is a running bare proxy.
type bareProxy struct {
	*clusterenv.Process
	addr string
}

func startBare(ctx context.Context, e *env, name, target string) (*bareProxy, error) {
	p, err := clusterenv.StartProcess(e.clean, "bare proxy ("+name+")", []string{e.bareBin, "--listen", "127.0.0.1:0", "--target", "http://" + target}, nil,
		filepath.Join(e.tmp, "bareproxy-"+name+".log"))
	if err != nil {
		return nil, err
	}
	addr, err := p.WaitRegexp(ctx, bareListening, clusterenv.StartTimeout)
	if err != nil {
		return nil, err
	}
	return &bareProxy{Process: p, addr: addr}, nil
}

// measure runs the load generator once against ct and reads the proxy's CPU time
// and the app's sockets around the measured window.
func measure(ctx context.Context, ct contestant, app netip.AddrPort, spec runSpec) (sample, error) {
	var cpu0, cpu1 time.Duration
	var cpuErr error
	var sock0, sock1 procfs.ServerSockets
	readCPU := func(into *time.Duration) {
		if ct.cpuPid == 0 {
			return
		}
		d, err := procfs.CPUTime(ct.cpuPid)
		if err != nil && cpuErr == nil {
			cpuErr = err
		}
		*into = d
	}
	opts := load.Options{
		Addr: ct.addr, Host: ct.host,
		Header: [][2]string{{"Accept", "application/json"}, {"User-Agent", "reaper-bench"}},
		Conns:  spec.conns, Warmup: spec.warmup, Duration: spec.duration,
		AtStart: func() {
			readCPU(&cpu0)
			sock0, _ = procfs.ReadServerSockets(app)
		},
		AtEnd: func() {
			readCPU(&cpu1)
			sock1, _ = procfs.ReadServerSockets(app)
		},
	}
	res, err := load.Run(ctx, opts)
	if err != nil {
		return sample{}, err
	}
	if !res.Clean() {
		return sample{}, fmt.Errorf("%s at %d connections: %s", contestantNames[ct.key], spec.conns, res.Problem())
	}
	if cpuErr != nil {
		return sample{}, fmt.Errorf("%s: reading the proxy's CPU time: %w", contestantNames[ct.key], cpuErr)
	}
	s := sample{res: res, appConns: sock1.Established, appClosed: max(sock1.TimeWait-sock0.TimeWait, 0)}
	if ct.cpuPid != 0 && res.Requests > 0 {
		s.cpuPerReq = (cpu1 - cpu0) / time.Duration(res.Requests)
	}
	return s, nil
}

// runRounds runs spec for every contestant, round after round, in alternating
// orders. hook, when not nil, is called before each run; the function it returns,
// when not nil, after it.
func runRounds(ctx context.Context, e *env, part string, cts map[string]contestant, app netip.AddrPort, spec runSpec, hook func(key string, round int) func() error) (samples, error) {
	out := samples{}
	for r := range spec.rounds {
		for _, k := range roundOrder(contestantKeys, r) {
			e.progressf("%s: round %d/%d, %s, %d connection(s), %s", part, r+1, spec.rounds, contestantNames[k], spec.conns, spec.duration)
			var after func() error
			if hook != nil {
				after = hook(k, r)
			}
			s, err := measure(ctx, cts[k], app, spec)
			if after != nil {
				if herr := after(); herr != nil && err == nil {
					err = herr
				}
			}
			if err != nil {
				return out, err
			}
			out[k] = append(out[k], s)
		}
	}
	return out, nil
}

// runAwake runs parts A to D and prints them.
func runAwake(ctx context.Context, e *env) ([]verdict, error) {
	s, err := setupAwake(ctx, e)
	if err != nil {
		return nil, err
	}
	defer s.node.shutdown()
	specA, specB, specC := awakeSpecs(e.opts.quick)

	var hookA, hookC func(string, int) func() error
	if e.opts.profile != "" {
		if hookA, err = profileHook(ctx, e, s.node, specA, kPlugin, e.opts.profile); err != nil {
			return nil, err
		}
		if hookC, err = profileHook(ctx, e, s.node, specC, kPlain, e.opts.profile+".slow"); err != nil {
			return nil, err
		}
	}
	a, err := runRounds(ctx, e, "A", s.fast, s.fastApp, specA, hookA)
	if err != nil {
		return nil, err
	}
	printA(e.out, a, specA, s)
	b, err := runRounds(ctx, e, "B", s.fast, s.fastApp, specB, nil)
	if err != nil {
		return nil, err
	}
	printB(e.out, b, specB)
	c, err := runRounds(ctx, e, "C", s.slow, s.slowApp, specC, hookC)
	if err != nil {
		return nil, err
	}
	printC(e.out, c, specC)
	if problems := s.node.Log.Problems(); len(problems) > 0 {
		fmt.Fprintf(e.out, "\n  reaper logged %d warnings or errors during A-C; the first:\n    %s\n", len(problems), problems[0])
	}
	return printD(e.out, a, b, c), nil
}

package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reapergw/reaper/bench/procfs"
	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part T: wake on TCP. One reaper with two TCP routes: a Postgres (process
// driver, postgres readiness probe) that sleeps after a second, and tcpsink, a
// Go app that reads what it is sent. It measures, side by side with a direct
// connection:
//
//   - a cold Postgres through the route: from Postgres logging that it accepts
//     connections to the held client's first query answered, beside the floor
//     of the same cold start with no reaper (a client that connects every 2 ms
//     by itself);
//   - an awake spliced connection's throughput: 1 GiB written to tcpsink,
//     through the route, through a bare Go forwarder (the same two hops: the
//     yardstick) and directly (one hop), with the CPU each forwarder spends;
//   - reaper's RSS with 1,000 idle spliced connections open.
//
// Why the yardstick and not the direct connection: on loopback a hop has no
// wire, only CPU. The kernel runs a TCP send and its delivery on the sender's
// CPU, so a forwarder, splice(2) or not, adds a whole second TCP transfer of
// every byte: it spends about what the client and the sink spend together
// (measured on the 2-CPU VM: about 0.2 s of CPU per GiB for the client and
// for the sink, 0.3 s for a splicing forwarder, reaper or bare). On a machine
// whose two CPUs are busy with other work, throughput follows the CPU each
// byte costs, and any forwarder reads about 0.5× direct; only spare CPUs (the
// forwarder's work in parallel with the client's) bring it near 1×. The ratio
// to the bare forwarder, run in the same rounds, measures what reaper adds to
// the hop; the direct figure is printed beside it. Where haproxy is installed,
// the same rounds copy through HAProxy splicing the hop too (tcphaproxy.go):
// what the best C forwarder gets on the same machine.

const (
	tcpWakes          = 10
	tcpCopyBytes      = 1 << 30
	tcpIdleConns      = 1000
	targetTCPWake     = 30 * time.Millisecond
	targetTCPCopy     = 0.9
	targetTCPIdleRSS  = 20 << 20
	tcpSleepTimeout   = 30 * time.Second
	tcpCopyRounds     = 5
	tcpFloorRounds    = 5
	targetTCPCopyCPU  = 1.15
	tcpAnswerDeadline = 60 * time.Second
)

// tcpReport is what part T measured.
type tcpReport struct {
	wakes         []time.Duration // Postgres ready → first query answered, through the route
	direct        []time.Duration // connect + first query, directly, Postgres awake
	steps         []wakeSteps     // where each wake's time went
	floor         []time.Duration // the same, Postgres started by the bench and polled directly (no reaper)
	routeCopy     []float64       // MiB/s through the route, per round
	bareCopy      []float64       // MiB/s through the bare forwarder
	directCopy    []float64       // MiB/s directly
	routeCPU      []float64       // reaper's CPU per GiB copied, ms, per round
	bareCPU       []float64       // the bare forwarder's
	haproxyCopy   []float64       // MiB/s through HAProxy (none without it)
	haproxyCPU    []float64       // HAProxy's CPU per GiB copied, ms
	idleBefore    int64           // reaper's RSS before the idle connections
	idleAfter     int64
	starts        int
	copyBytes     int64
	wakesMeasured int
}

// tcpNode is reaper with part T's two routes.
type tcpNode struct {
	*reaperNode
	pg                 *pgCluster
	pgAddr, sinkAddr   string
	pgRoute, sinkRoute string
	bare               *clusterenv.Process // the bare TCP forwarder to tcpsink
	bareAddr           string
	haproxy            *clusterenv.Process // nil without haproxy on PATH
	haproxyAddr        string
}

func runTCP(ctx context.Context, e *env) ([]verdict, error) {
	r := tcpReport{copyBytes: tcpCopyBytes}
	wakes := tcpWakes
	if e.opts.quick {
		wakes, r.copyBytes = 3, 128<<20
	}
	n, err := startTCPNode(ctx, e, &r)
	if err != nil {
		return nil, err
	}
	defer n.shutdown()
	if err := n.measureWakes(ctx, e, wakes, &r); err != nil {
		return nil, err
	}
	if err := n.measureCopies(ctx, e, &r); err != nil {
		return nil, err
	}
	if err := n.measureIdle(ctx, e, &r); err != nil {
		return nil, err
	}
	r.starts = n.Log.CountMsg("app woken", "db")
	return printT(e.out, r), nil
}

// startTCPNode makes the Postgres cluster and measures its cold floor, builds
// tcpsink, starts reaper and the bare forwarder.
func startTCPNode(ctx context.Context, e *env, r *tcpReport) (*tcpNode, error) {
	pg, err := newPGCluster(filepath.Join(e.tmp, "tcp-pg"))
	if err != nil {
		return nil, err
	}
	sinkBin := filepath.Join(e.tmp, "tcpsink")
	if err := clusterenv.Build(ctx, e.root, sinkBin, "./bench/tcpsink"); err != nil {
		return nil, err
	}
	n := &tcpNode{pg: pg}
	if n.pgAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	if n.sinkAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	_, pgPort, _ := net.SplitHostPort(n.pgAddr)
	e.progressf("T: a cold Postgres without reaper: the floor of its first answer")
	floorRounds := tcpFloorRounds
	if e.opts.quick {
		floorRounds = 2
	}
	if r.floor, err = pg.coldFloor(ctx, e, n.pgAddr, floorRounds); err != nil {
		return nil, err
	}
	cfg := clusterenv.Config{
		Node:   newNodeConfig("tcp"),
		Reaper: &clusterenv.JobConfig{JobInterval: "1s", FastInterval: "200ms"},
		PaaS: clusterenv.PaaSConfig{Driver: "process", Apps: []clusterenv.AppConfig{
			{ID: "db", Command: pg.command(pgPort), Ready: clusterenv.ReadyConfig{Postgres: n.pgAddr}, StopSignal: "SIGINT", StopTimeout: "10s", LogFile: pg.log},
			{ID: "sink", Command: []string{sinkBin, "--listen", n.sinkAddr}, Ready: clusterenv.ReadyConfig{TCP: n.sinkAddr}},
		}},
		TCPRoutes: []clusterenv.TCPRouteConfig{
			{ID: "pg", Listen: "127.0.0.1:0", AppID: "db", Target: n.pgAddr, GracePeriod: "1s", FailTimeout: "60s"},
			{ID: "sink", Listen: "127.0.0.1:0", AppID: "sink", Target: n.sinkAddr, GracePeriod: "10m", Mode: "keep_connections", MaxHeld: 5000},
		},
	}
	e.progressf("T: starting reaper with a sleeping Postgres and tcpsink behind TCP routes")
	if n.reaperNode, err = startReaper(ctx, e, "tcp", cfg); err != nil {
		return nil, err
	}
	for _, id := range []string{"pg", "sink"} {
		line, err := n.Log.WaitFor(ctx, clusterenv.StartTimeout, func(l string) bool {
			return strings.Contains(l, `"msg":"tcp route listening"`) && strings.Contains(l, `"route":"`+id+`"`)
		})
		if err != nil {
			n.shutdown()
			return nil, err
		}
		var l struct{ Addr string }
		_ = json.Unmarshal([]byte(line), &l)
		if id == "pg" {
			n.pgRoute = l.Addr
		} else {
			n.sinkRoute = l.Addr
		}
	}
	if err := n.startBare(ctx, e); err != nil {
		n.shutdown()
		return nil, err
	}
	if err := n.startHAProxy(ctx, e); err != nil {
		n.shutdown()
		return nil, err
	}
	return n, nil
}

// startBare starts the bare TCP forwarder to tcpsink (bareproxy, tcp:// target).
func (n *tcpNode) startBare(ctx context.Context, e *env) error {
	p, err := clusterenv.StartProcess(e.clean, "bare TCP forwarder", []string{e.bareBin, "--listen", "127.0.0.1:0", "--target", "tcp://" + n.sinkAddr}, nil,
		filepath.Join(e.tmp, "bareproxy-tcp.log"))
	if err != nil {
		return err
	}
	n.bare = p
	n.bareAddr, err = p.WaitRegexp(ctx, bareListening, clusterenv.StartTimeout)
	return err
}

// downs counts db's changes to Down in reaper's log.
func (n *tcpNode) downs() int {
	c := 0
	for _, l := range n.Log.Snapshot() {
		if strings.Contains(l, `"msg":"app status changed"`) && strings.Contains(l, `"app":"db"`) && strings.Contains(l, `"to":"Down"`) {
			c++
		}
	}
	return c
}

// awaitSleep waits until db went Down for the nth time.
func (n *tcpNode) awaitSleep(ctx context.Context, nth int) error {
	deadline := time.Now().Add(tcpSleepTimeout)
	for n.downs() < nth {
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: T: Postgres was not put to sleep within %s (sleep %d)", tcpSleepTimeout, nth)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// query connects to addr and runs SELECT 1, and returns when its answer was read.
func query(ctx context.Context, addr string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, tcpAnswerDeadline)
	defer cancel()
	conn, err := pgconn.Connect(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable")
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT 1").ReadAll(); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// measureWakes wakes Postgres through the route, once per round, and takes the
// time from its "ready to accept connections" to the first query's answer; then
// the same query directly, Postgres awake, for comparison.
func (n *tcpNode) measureWakes(ctx context.Context, e *env, rounds int, r *tcpReport) error {
	for i := range rounds {
		if err := n.awaitSleep(ctx, i+1); err != nil {
			return err
		}
		answered, err := query(ctx, n.pgRoute)
		if err != nil {
			return fmt.Errorf("bench: T: a query through the route to a sleeping Postgres: %w", err)
		}
		ready, err := n.pg.readyTimes()
		if err != nil || len(ready) < i+1 {
			return fmt.Errorf("bench: T: Postgres's ready time %d not in its log: %v", i+1, err)
		}
		r.wakes = append(r.wakes, answered.Sub(ready[len(ready)-1]))
		st := n.wakeStepsOf(ctx, ready[len(ready)-1], answered)
		r.steps = append(r.steps, st)
		start := time.Now()
		if _, err := query(ctx, n.pgAddr); err != nil {
			return fmt.Errorf("bench: T: a query straight to Postgres: %w", err)
		}
		r.direct = append(r.direct, time.Since(start))
		e.progressf("T: wake %d/%d: %s from Postgres ready to the answer (probe passed +%s, Up +%s, dialled +%s)",
			i+1, rounds, millis(r.wakes[i]), millis(st.probed), millis(st.up), millis(st.released))
	}
	r.wakesMeasured = rounds
	return nil
}

// copyOnce writes size bytes to addr, closes its half and reads the sink's
// count; it returns MiB/s.
func copyOnce(ctx context.Context, addr string, size int64) (float64, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	buf := make([]byte, 256<<10)
	start := time.Now()
	for sent := int64(0); sent < size; {
		k := min(int64(len(buf)), size-sent)
		if _, err := c.Write(buf[:k]); err != nil {
			return 0, err
		}
		sent += k
	}
	_ = c.(*net.TCPConn).CloseWrite()
	var got [8]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if n := int64(binary.BigEndian.Uint64(got[:])); n != size {
		return 0, fmt.Errorf("bench: T: the sink read %d bytes of %d", n, size)
	}
	return float64(size) / (1 << 20) / took.Seconds(), nil
}

// measureCopies copies through the route, through the bare forwarder and
// directly, in a different order each round (rotated), and takes each
// forwarder's CPU over its copy.
func (n *tcpNode) measureCopies(ctx context.Context, e *env, r *tcpReport) error {
	for _, addr := range []string{n.sinkRoute, n.bareAddr} { // wakes the sink; warms both paths
		if _, err := copyOnce(ctx, addr, 64<<20); err != nil {
			return fmt.Errorf("bench: T: warming up %s: %w", addr, err)
		}
	}
	rounds := tcpCopyRounds
	if e.opts.quick {
		rounds = 1
	}
	type copyPath struct {
		addr     string
		pid      int // 0: no forwarder's CPU to read (direct)
		into     *[]float64
		cpu      *[]float64
		nickname string
	}
	paths := []copyPath{{n.sinkRoute, n.PID(), &r.routeCopy, &r.routeCPU, "route"}, {n.bareAddr, n.bare.PID(), &r.bareCopy, &r.bareCPU, "bare"}, {n.sinkAddr, 0, &r.directCopy, nil, "direct"}}
	if n.haproxy != nil {
		paths = append(paths, copyPath{n.haproxyAddr, n.haproxy.PID(), &r.haproxyCopy, &r.haproxyCPU, "haproxy"})
	}
	for i := range rounds {
		for k := range paths {
			p := paths[(i+k)%len(paths)]
			var before time.Duration
			if p.pid != 0 {
				before, _ = procfs.CPUTime(p.pid)
			}
			mibs, err := copyOnce(ctx, p.addr, r.copyBytes)
			if err != nil {
				return fmt.Errorf("bench: T: copy to %s (%s): %w", p.addr, p.nickname, err)
			}
			*p.into = append(*p.into, mibs)
			if p.pid != 0 {
				after, _ := procfs.CPUTime(p.pid)
				*p.cpu = append(*p.cpu, float64((after-before).Milliseconds())/(float64(r.copyBytes)/(1<<30)))
			}
		}
		e.progressf("T: copy round %d/%d: %.0f MiB/s through the route, %.0f through the bare forwarder, %.0f directly",
			i+1, rounds, r.routeCopy[i], r.bareCopy[i], r.directCopy[i])
	}
	return nil
}

// measureIdle opens tcpIdleConns connections through the sink's route, waits
// until reaper has dialled every one, and reads reaper's RSS before and after.
func (n *tcpNode) measureIdle(ctx context.Context, e *env, r *tcpReport) error {
	before, err := procfs.ReadMemory(n.PID())
	if err != nil {
		return err
	}
	r.idleBefore = before.RSS
	conns := make([]net.Conn, 0, tcpIdleConns)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range tcpIdleConns {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", n.sinkRoute)
		if err != nil {
			return fmt.Errorf("bench: T: opening idle connections: %w", err)
		}
		conns = append(conns, c)
	}
	sink := netip.MustParseAddrPort(n.sinkAddr)
	deadline := time.Now().Add(30 * time.Second)
	for {
		socks, err := procfs.ReadServerSockets(sink)
		if err != nil {
			return err
		}
		if socks.Established >= tcpIdleConns {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: T: only %d of %d idle connections reached tcpsink", socks.Established, tcpIdleConns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.Gosched()
	after, err := procfs.ReadMemory(n.PID())
	if err != nil {
		return err
	}
	r.idleAfter = after.RSS
	e.progressf("T: %d idle spliced connections: reaper's RSS %s → %s", tcpIdleConns, mib(r.idleBefore), mib(r.idleAfter))
	return nil
}

// printT prints part T's figures beside a direct connection's, and its verdicts.
func printT(w io.Writer, r tcpReport) []verdict {
	fmt.Fprintf(w, "\nT. Wake on TCP: a sleeping Postgres and tcpsink behind TCP routes\n")
	each := make([]string, len(r.wakes))
	for i, d := range r.wakes {
		each[i] = millis(d)
	}
	wake := median(r.wakes)
	fmt.Fprintf(w, "   cold Postgres through the route, from \"ready to accept connections\" to the held client's first answer: median %s (%s)\n", millis(wake), strings.Join(each, ", "))
	printWakeSteps(w, r.steps)
	floors := make([]string, len(r.floor))
	for i, d := range r.floor {
		floors[i] = millis(d)
	}
	fmt.Fprintf(w, "   the same cold start with no reaper (the bench starts Postgres, a client connects every 2 ms): median %s (%s)\n",
		millis(median(r.floor)), strings.Join(floors, ", "))
	fmt.Fprintf(w, "   directly, Postgres awake, connect and first answer: median %s; \"app woken\" logged %d time(s) for %d wakes\n", millis(median(r.direct)), r.starts, r.wakesMeasured)
	vsBare, vsDirect := pairedRatios(r.routeCopy, r.bareCopy), pairedRatios(r.routeCopy, r.directCopy)
	copied, cpu := median(vsBare), median(r.routeCPU)/median(r.bareCPU)
	fmt.Fprintf(w, "   %s MiB copied to tcpsink (median of %d rounds): %.0f MiB/s through the route, %.0f through a bare Go forwarder (the same two hops), %.0f directly (one hop)\n",
		thousands(r.copyBytes>>20), len(vsBare), median(r.routeCopy), median(r.bareCopy), median(r.directCopy))
	fmt.Fprintf(w, "   route / bare forwarder, paired by round: %s; route / direct: %s (a loopback hop costs CPU, not wire: see bench/tcp.go)\n",
		joinRatios(vsBare), joinRatios(vsDirect))
	fmt.Fprintf(w, "   CPU per GiB copied: reaper %.0f ms, the bare forwarder %.0f ms (medians)\n", median(r.routeCPU), median(r.bareCPU))
	if len(r.haproxyCopy) > 0 {
		fmt.Fprintf(w, "   HAProxy splicing the same hop: %.0f MiB/s, %.0f ms of CPU per GiB; route / HAProxy: %s; HAProxy / direct: %s\n",
			median(r.haproxyCopy), median(r.haproxyCPU), joinRatios(pairedRatios(r.routeCopy, r.haproxyCopy)), joinRatios(pairedRatios(r.haproxyCopy, r.directCopy)))
	} else {
		fmt.Fprintf(w, "   HAProxy: not installed (apt-get install haproxy): its yardstick was not run\n")
	}
	delta := r.idleAfter - r.idleBefore
	fmt.Fprintf(w, "   %s idle spliced connections: reaper's RSS %s → %s (%s more, %.1f KiB each)\n",
		thousands(tcpIdleConns), mib(r.idleBefore), mib(r.idleAfter), mib(delta), float64(delta)/1024/tcpIdleConns)
	return []verdict{
		{"T", "cold Postgres: ready → first query answered, median", millis(wake), "≤ " + millis(targetTCPWake), wake > 0 && wake <= targetTCPWake, strings.Join(each, ", ")},
		{"T", "Postgres started once per wake", fmt.Sprintf("%d / %d", r.starts, r.wakesMeasured), "equal", r.starts == r.wakesMeasured, ""},
		{"T", "throughput of a spliced connection vs a bare forwarder", ratio(copied), "≥ " + ratio(targetTCPCopy), copied >= targetTCPCopy, joinRatios(vsBare)},
		{"T", "CPU per GiB spliced vs a bare forwarder", ratio(cpu), "≤ " + ratio(targetTCPCopyCPU), cpu > 0 && cpu <= targetTCPCopyCPU, ""},
		{"T", fmt.Sprintf("RSS of %s idle spliced connections", thousands(tcpIdleConns)), mib(delta), "< " + mib(targetTCPIdleRSS), delta < targetTCPIdleRSS, ""},
	}
}

// pairedRatios are a[i]/b[i].
func pairedRatios(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] / b[i]
	}
	return out
}

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
//     connections to the held client's first query answered;
//   - an awake spliced connection's throughput: 1 GiB written to tcpsink;
//   - reaper's RSS with 1,000 idle spliced connections open.

const (
	tcpWakes          = 10
	tcpCopyBytes      = 1 << 30
	tcpIdleConns      = 1000
	targetTCPWake     = 30 * time.Millisecond
	targetTCPCopy     = 0.9
	targetTCPIdleRSS  = 20 << 20
	tcpSleepTimeout   = 30 * time.Second
	tcpCopyRounds     = 3
	tcpAnswerDeadline = 60 * time.Second
)

// tcpReport is what part T measured.
type tcpReport struct {
	wakes         []time.Duration // Postgres ready → first query answered, through the route
	direct        []time.Duration // connect + first query, directly, Postgres awake
	routeCopy     []float64       // MiB/s through the route, per round
	directCopy    []float64       // MiB/s directly
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
}

func runTCP(ctx context.Context, e *env) ([]verdict, error) {
	n, err := startTCPNode(ctx, e)
	if err != nil {
		return nil, err
	}
	defer n.shutdown()
	r := tcpReport{copyBytes: tcpCopyBytes}
	wakes := tcpWakes
	if e.opts.quick {
		wakes, r.copyBytes = 3, 128<<20
	}
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

// startTCPNode makes the Postgres cluster, builds tcpsink and starts reaper.
func startTCPNode(ctx context.Context, e *env) (*tcpNode, error) {
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
	return n, nil
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
		start := time.Now()
		if _, err := query(ctx, n.pgAddr); err != nil {
			return fmt.Errorf("bench: T: a query straight to Postgres: %w", err)
		}
		r.direct = append(r.direct, time.Since(start))
		e.progressf("T: wake %d/%d: %s from Postgres ready to the answer", i+1, rounds, millis(r.wakes[i]))
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

// measureCopies copies through the route and directly, alternately.
func (n *tcpNode) measureCopies(ctx context.Context, e *env, r *tcpReport) error {
	if _, err := copyOnce(ctx, n.sinkRoute, 1<<20); err != nil { // wakes the sink
		return fmt.Errorf("bench: T: waking tcpsink: %w", err)
	}
	rounds := tcpCopyRounds
	if e.opts.quick {
		rounds = 1
	}
	for i := range rounds {
		for _, path := range []struct {
			addr string
			into *[]float64
		}{{n.sinkRoute, &r.routeCopy}, {n.sinkAddr, &r.directCopy}} {
			mibs, err := copyOnce(ctx, path.addr, r.copyBytes)
			if err != nil {
				return fmt.Errorf("bench: T: copy to %s: %w", path.addr, err)
			}
			*path.into = append(*path.into, mibs)
		}
		e.progressf("T: copy round %d/%d: %.0f MiB/s through the route, %.0f directly", i+1, rounds, r.routeCopy[i], r.directCopy[i])
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
	fmt.Fprintf(w, "   directly, Postgres awake, connect and first answer: median %s; \"app woken\" logged %d time(s) for %d wakes\n", millis(median(r.direct)), r.starts, r.wakesMeasured)
	routeMiB, directMiB := median(r.routeCopy), median(r.directCopy)
	ratios := make([]float64, len(r.routeCopy))
	for i := range ratios {
		ratios[i] = r.routeCopy[i] / r.directCopy[i]
	}
	copied := median(ratios)
	fmt.Fprintf(w, "   %s MiB copied to tcpsink: %.0f MiB/s through the route, %.0f MiB/s directly (median of %d rounds; paired ratios %s)\n",
		thousands(r.copyBytes>>20), routeMiB, directMiB, len(ratios), joinRatios(ratios))
	delta := r.idleAfter - r.idleBefore
	fmt.Fprintf(w, "   %s idle spliced connections: reaper's RSS %s → %s (%s more, %.1f KiB each)\n",
		thousands(tcpIdleConns), mib(r.idleBefore), mib(r.idleAfter), mib(delta), float64(delta)/1024/tcpIdleConns)
	return []verdict{
		{"T", "cold Postgres: ready → first query answered, median", millis(wake), "≤ " + millis(targetTCPWake), wake > 0 && wake <= targetTCPWake, strings.Join(each, ", ")},
		{"T", "Postgres started once per wake", fmt.Sprintf("%d / %d", r.starts, r.wakesMeasured), "equal", r.starts == r.wakesMeasured, ""},
		{"T", "throughput of a spliced connection vs direct", ratio(copied), "≥ " + ratio(targetTCPCopy), copied >= targetTCPCopy, joinRatios(ratios)},
		{"T", fmt.Sprintf("RSS of %s idle spliced connections", thousands(tcpIdleConns)), mib(delta), "< " + mib(targetTCPIdleRSS), delta < targetTCPIdleRSS, ""},
	}
}

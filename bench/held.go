package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reapergw/reaper/bench/procfs"
	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part F: one node holding 10,000 requests for one sleeping app. The app takes
// heldBootDelay to open its port once reaper starts it, which leaves time to open
// every connection and see every request held. "Held" is measured from outside,
// without trusting reaper: every request has been written by the client, the
// kernel shows every connection to the gateway accepted by reaper with nothing
// left unread in its receive queue (/proc/net/tcp), and no answer has come back.
// The bench then samples reaper's RSS (VmRSS) until the app opens its port, and
// checks that every request gets the app's 200 from one and the same process,
// started once. Part F2 (heldpy.go) does the same with another app: measureHeld
// is the run of both, heldParams what they vary.

const (
	heldHost = "held.test"
	// heldBootDelay is long enough to open 10,000 connections on a busy 2-CPU
	// machine with time to spare.
	heldBootDelay = 12 * time.Second
	// dialParallel bounds the connections being opened at once, below the
	// listener's accept backlog.
	dialParallel = 128
	// heldMax is the route's max_held: above the requests sent, so none is refused.
	heldMax = 20000
	// targetHeldRSS is issue 3's target for the node's RSS.
	targetHeldRSS = 150 << 20
	// answerTimeout bounds the wait for every answer once the app is up.
	answerTimeout = 60 * time.Second
)

// heldRequest is one client connection with its request in flight.
type heldRequest struct {
	conn   net.Conn
	status int
	pid    int
	err    error
	at     time.Time // when the app's 200 was read whole
}

// heldRun is the state of a held-requests part while it runs.
type heldRun struct {
	host     string // the route's domain, the requests' Host
	reqs     []*heldRequest
	answered atomic.Int64
	late     atomic.Bool // waitAnswers has cut the reads still waiting short
	wg       sync.WaitGroup
}

// heldParams is what a held-requests part varies: the app behind the route.
type heldParams struct {
	part string // "F", "F2": in progress lines
	host string // the route's domain
	what string // the app, in progress lines: "a demo app"
	// app returns the app's configuration: listening on addr, opening its port
	// heldBootDelay after its start. Its ID names the route and reaper's directory.
	app func(addr string) (clusterenv.AppConfig, error)
	// profile saves the -profile heap profiles while every request is held.
	profile bool
	// appStats, when set, asks the app (at addr) what it saw, once every answer is in.
	appStats func(ctx context.Context, addr string) (string, error)
}

// runHeld runs part F with the demo app and prints its report.
func runHeld(ctx context.Context, e *env) ([]verdict, error) {
	r, err := measureHeld(ctx, e, heldParams{
		part: "F", host: heldHost, what: "a demo app", profile: true,
		app: func(addr string) (clusterenv.AppConfig, error) { return heldDemoApp(e.demoBin, addr), nil },
	})
	if err != nil {
		return nil, err
	}
	return printF(e.out, r), nil
}

// measureHeld starts reaper with the sleeping app, sends every request, sees them
// all held, samples reaper's memory until the app is up, then waits for every
// answer.
func measureHeld(ctx context.Context, e *env, p heldParams) (heldReport, error) {
	n := 10000
	if e.opts.quick {
		n = 2000
	}
	addr, err := freeAddr()
	if err != nil {
		return heldReport{}, err
	}
	app, err := p.app(addr)
	if err != nil {
		return heldReport{}, err
	}
	e.progressf("%s: starting reaper with %s that boots in %s", p.part, p.what, heldBootDelay)
	node, err := startReaper(ctx, e, app.ID, heldConfig(p.host, app))
	if err != nil {
		return heldReport{}, err
	}
	defer node.shutdown()
	idle, err := waitHeldIdle(ctx, node, p.host)
	if err != nil {
		return heldReport{}, err
	}

	e.progressf("%s: opening %d connections, one request held on each", p.part, n)
	run := &heldRun{host: p.host, reqs: make([]*heldRequest, n)}
	defer run.closeAll()
	started := time.Now()
	if err := run.send(ctx, node.gateway, n); err != nil {
		return heldReport{}, err
	}
	written := time.Since(started)
	socks, err := run.waitAllHeld(ctx, node.gateway, started)
	if err != nil {
		return heldReport{}, err
	}
	allHeld := time.Since(started)
	e.progressf("%s: all %d held after %s; sampling reaper's memory until the app is up", p.part, n, allHeld.Round(time.Millisecond))
	if p.profile && e.opts.profile != "" {
		if err := heldProfiles(ctx, e, node); err != nil {
			return heldReport{}, err
		}
	}
	peak, fds, samples, err := run.sampleRSS(ctx, node.PID(), addr, started)
	if err != nil {
		return heldReport{}, err
	}

	e.progressf("%s: the app is up; waiting for %d answers", p.part, n)
	released := time.Now()
	if err := run.waitAnswers(ctx, answerTimeout); err != nil {
		return heldReport{}, err
	}
	releaseTime := time.Since(released)
	after, _ := procfs.ReadMemory(node.PID())
	r := heldReport{
		n: n, written: written, allHeld: allHeld, socks: socks, idle: idle, peak: peak, samples: samples,
		fds: fds, releaseTime: releaseTime, okAfter: run.okAfter(released), after: after, tally: run.tally(), woken: node.Log.CountMsg("app woken", app.ID),
		problems: node.Log.Problems(),
	}
	if p.appStats != nil {
		if r.appStats, err = p.appStats(ctx, addr); err != nil {
			r.appStats = "unknown (" + err.Error() + ")"
		}
	}
	return r, nil
}

// waitHeldIdle waits until reaper shows the app behind host Down, closes the
// connections it used for that, and returns reaper's memory then: idle, before
// any request is held.
func waitHeldIdle(ctx context.Context, node *reaperNode, host string) (procfs.Memory, error) {
	c := clusterenv.NewClient(10 * time.Second)
	err := clusterenv.WaitStatus(ctx, c, node.gateway, host, "Down", clusterenv.StartTimeout)
	c.CloseIdleConnections() // only the held requests may be connected from here on
	if err != nil {
		return procfs.Memory{}, err
	}
	return procfs.ReadMemory(node.PID())
}

// waitAllHeld waits until reaper has read every request: every connection to the
// gateway accepted, no byte unread. The app must not be up yet (no answer), or the
// figure would not be that of a node holding them all: so it fails at the first
// answer, and gives up a second before the app's boot delay since started. It returns
// the sockets as last seen.
func (run *heldRun) waitAllHeld(ctx context.Context, gateway string, started time.Time) (procfs.ServerSockets, error) {
	gw, n := netip.MustParseAddrPort(gateway), len(run.reqs)
	deadline := started.Add(heldBootDelay - time.Second)
	for {
		socks, err := procfs.ReadServerSockets(gw)
		if err != nil {
			return socks, err
		}
		if socks.Established >= n && socks.Settled() {
			return socks, nil
		}
		if a := run.answered.Load(); a > 0 {
			return socks, fmt.Errorf("%d requests were answered before all %d were held: %s", a, n, run.firstAnswer())
		}
		if time.Now().After(deadline) {
			return socks, fmt.Errorf("not all %d requests held %s after the first: sockets %+v", n, time.Since(started).Round(time.Millisecond), socks)
		}
		if !clusterenv.SleepCtx(ctx, 50*time.Millisecond) { // poll /proc
			return socks, ctx.Err()
		}
	}
}

// sampleRSS samples the memory of reaper (pid) every 100 ms while it holds every
// request: until the app's port (appAddr, host:port) opens or an answer comes. A
// sample counts only if the app was still not listening after it was taken. It
// returns the sample with the highest RSS, the files reaper had open then, and how
// many samples counted; it fails if none did, or if the app has not opened its port
// answerTimeout after its boot delay since started.
func (run *heldRun) sampleRSS(ctx context.Context, pid int, appAddr string, started time.Time) (peak procfs.Memory, fds, samples int, err error) {
	app := netip.MustParseAddrPort(appAddr)
	for {
		m, err := procfs.ReadMemory(pid)
		if err != nil {
			return peak, fds, samples, err
		}
		open, _ := procfs.OpenFiles(pid)
		appSocks, err := procfs.ReadServerSockets(app)
		if err != nil {
			return peak, fds, samples, err
		}
		if appSocks.Listening || run.answered.Load() > 0 {
			break
		}
		if m.RSS > peak.RSS {
			peak, fds = m, open
		}
		samples++
		if time.Since(started) > heldBootDelay+answerTimeout {
			return peak, fds, samples, errors.New("the app never opened its port")
		}
		if !clusterenv.SleepCtx(ctx, 100*time.Millisecond) { // sampling interval
			return peak, fds, samples, ctx.Err()
		}
	}
	if samples == 0 {
		return peak, fds, samples, errors.New("the app opened its port before reaper's memory could be sampled")
	}
	return peak, fds, samples, nil
}

// errNoAnswer is the error of a request without an answer answerTimeout after
// the app opened its port.
var errNoAnswer = fmt.Errorf("no answer within %s of the app's port opening", answerTimeout)

// waitAnswers waits until every request has its answer, or its error, for
// timeout at most: then the requests still waiting fail, with errNoAnswer, and
// count as such (a request that never comes back is a figure of the part, not a
// part that could not measure).
func (run *heldRun) waitAnswers(ctx context.Context, timeout time.Duration) error {
	done := make(chan struct{})
	go func() { run.wg.Wait(); close(done) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	run.late.Store(true)
	for _, h := range run.reqs {
		if h != nil {
			_ = h.conn.SetReadDeadline(time.Now()) // ends its read at once
		}
	}
	<-done
	return nil
}

// heldConfig is the reaper of parts F and F2: app, sleeping, behind a route for
// host that holds its requests; the route and the node are named after app.ID.
func heldConfig(host string, app clusterenv.AppConfig) clusterenv.Config {
	return clusterenv.Config{
		Node:   newNodeConfig("bench-" + app.ID),
		Reaper: &clusterenv.JobConfig{MaxHeld: heldMax}, // the default, half the open-file limit, is about n
		PaaS:   clusterenv.PaaSConfig{Driver: "process", Apps: []clusterenv.AppConfig{app}},
		Routes: []clusterenv.RouteConfig{reaperRoute(app.ID, host, app.Ready.TCP, clusterenv.ReaperPluginConfig{
			AppID: app.ID, GracePeriod: "1h", FailTimeout: "5m", APIBehavior: "hold", MaxHeld: heldMax,
		})},
	}
}

// heldDemoApp is part F's app: the demo app, on addr, booting in heldBootDelay.
func heldDemoApp(demoBin, addr string) clusterenv.AppConfig {
	return demoApp(demoBin, "held", addr, "--boot-delay", heldBootDelay.String())
}

// send opens n connections, dialParallel at a time, writes one request on each
// and starts reading each answer in the background.
func (run *heldRun) send(ctx context.Context, gateway string, n int) error {
	req := []byte("GET / HTTP/1.1\r\nHost: " + run.host + "\r\nAccept: application/json\r\nUser-Agent: reaper-bench\r\n\r\n")
	var next atomic.Int64
	errs := make(chan error, dialParallel)
	var dialers sync.WaitGroup
	for range dialParallel {
		dialers.Go(func() {
			d := net.Dialer{Timeout: 10 * time.Second}
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				conn, err := d.DialContext(ctx, "tcp", gateway)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i+1, err)
					return
				}
				h := &heldRequest{conn: conn}
				run.reqs[i] = h
				if _, err := conn.Write(req); err != nil {
					errs <- fmt.Errorf("request %d: %w", i+1, err)
					return
				}
				run.wg.Go(func() { run.read(h) })
			}
		})
	}
	dialers.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// read reads the answer of h whole and keeps its status and pid.
func (run *heldRun) read(h *heldRequest) {
	defer run.answered.Add(1)
	// A backstop: waitAnswers cuts the reads short answerTimeout after the release.
	_ = h.conn.SetReadDeadline(time.Now().Add(heldBootDelay + 2*answerTimeout))
	resp, err := http.ReadResponse(bufio.NewReaderSize(h.conn, 1024), nil)
	if err != nil {
		h.err = run.readErr(err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	h.status = resp.StatusCode
	if err != nil {
		h.err = run.readErr(err)
		return
	}
	var info appInfo
	if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &info) == nil {
		h.pid, h.at = info.PID, time.Now()
	} else {
		h.err = fmt.Errorf("%d %.120s", resp.StatusCode, bytes.TrimSpace(body))
	}
}

// readErr is errNoAnswer for a read that waitAnswers cut short, else err.
func (run *heldRun) readErr(err error) error {
	if run.late.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		return errNoAnswer
	}
	return err
}

// okAfter returns when each 200 came, from since, in order.
func (run *heldRun) okAfter(since time.Time) []time.Duration {
	var out []time.Duration
	for _, h := range run.reqs {
		if h != nil && !h.at.IsZero() {
			out = append(out, h.at.Sub(since))
		}
	}
	slices.Sort(out)
	return out
}

// firstAnswer describes one request that has an answer or an error.
func (run *heldRun) firstAnswer() string {
	for _, h := range run.reqs {
		if h != nil && (h.status != 0 || h.err != nil) {
			return fmt.Sprintf("status %d, %v", h.status, h.err)
		}
	}
	return "none found"
}

// closeAll closes every client connection.
func (run *heldRun) closeAll() {
	for _, h := range run.reqs {
		if h != nil {
			h.conn.Close()
		}
	}
	run.wg.Wait()
}

// heldTally counts the answers.
type heldTally struct {
	ok       int         // 200 from the demo app
	pids     map[int]int // answers per app pid
	errors   int
	firstErr string
}

func (run *heldRun) tally() heldTally {
	t := heldTally{pids: map[int]int{}}
	for _, h := range run.reqs {
		switch {
		case h == nil:
			t.errors++
		case h.err != nil:
			t.errors++
			if t.firstErr == "" {
				t.firstErr = h.err.Error()
			}
		default:
			t.ok++
			t.pids[h.pid]++
		}
	}
	return t
}

type heldReport struct {
	n                int
	written, allHeld time.Duration
	socks            procfs.ServerSockets
	idle, peak       procfs.Memory
	after            procfs.Memory
	samples          int
	fds              int
	releaseTime      time.Duration
	okAfter          []time.Duration // when each 200 came, from the release, in order
	tally            heldTally
	woken            int
	problems         []string
	appStats         string // what the app says it saw, when it says
}

// printF prints part F's report and returns its verdicts.
func printF(w io.Writer, r heldReport) []verdict {
	fmt.Fprintf(w, "\nF. %s requests held by one node for one sleeping app (boot %s, max_held %s)\n", thousands(int64(r.n)), heldBootDelay, thousands(heldMax))
	printHeld(w, r)
	return append([]verdict{
		{"F", fmt.Sprintf("RSS of one node holding %s requests", thousands(int64(r.n))), mib(r.peak.RSS), "≤ " + mib(targetHeldRSS), r.peak.RSS > 0 && r.peak.RSS <= targetHeldRSS, ""},
	}, answerVerdicts("F", r)...)
}

// printHeld prints the figures of a held-requests part, under its title.
func printHeld(w io.Writer, r heldReport) {
	fmt.Fprintf(w, "   all requests written after %s; all held after %s: %d connections accepted by reaper, none with unread bytes, no answer yet\n",
		r.written.Round(time.Millisecond), r.allHeld.Round(time.Millisecond), r.socks.Established)
	fmt.Fprintf(w, "   reaper RSS while holding them: %s (highest of %d samples until the app opened its port), %s before: %.1f KiB per held request; %d threads, %d open files\n",
		mib(r.peak.RSS), r.samples, mib(r.idle.RSS), float64(r.peak.RSS-r.idle.RSS)/1024/float64(r.n), r.peak.Threads, r.fds)
	fmt.Fprintf(w, "   after the release: every answer in %s; reaper's peak RSS over the whole run (VmHWM) %s\n", r.releaseTime.Round(time.Millisecond), mib(r.after.HWM))
	if len(r.okAfter) > 0 {
		fmt.Fprintf(w, "   the app's 200s, from the release: half in %s, 99%% in %s, the last in %s\n",
			quantile(r.okAfter, 0.5).Round(time.Millisecond), quantile(r.okAfter, 0.99).Round(time.Millisecond), r.okAfter[len(r.okAfter)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(w, "   answers: %d × 200 from the app, %d errors", r.tally.ok, r.tally.errors)
	if r.tally.firstErr != "" {
		fmt.Fprintf(w, " (first: %s)", r.tally.firstErr)
	}
	pids := make([]string, 0, len(r.tally.pids))
	for pid, n := range r.tally.pids {
		pids = append(pids, fmt.Sprintf("pid %d: %d", pid, n))
	}
	slices.Sort(pids)
	fmt.Fprintf(w, "\n   answers per app process: %s; \"app woken\" logged %d time(s)\n", strings.Join(pids, ", "), r.woken)
	if r.appStats != "" {
		fmt.Fprintf(w, "   the app saw %s\n", r.appStats)
	}
	if len(r.problems) > 0 {
		fmt.Fprintf(w, "   reaper logged %d warnings or errors; the first:\n     %s\n", len(r.problems), r.problems[0])
	}
}

// answerVerdicts are the targets of a held-requests part on the answers: every
// request answered 200 by the app, which started once.
func answerVerdicts(part string, r heldReport) []verdict {
	onePID := len(r.tally.pids) == 1
	return []verdict{
		{part, "every held request answered 200 by the app", fmt.Sprintf("%d of %d", r.tally.ok, r.n), fmt.Sprintf("%d", r.n), r.tally.ok == r.n, ""},
		{part, "the app started exactly once (\"app woken\", pids)", fmt.Sprintf("%d, %d pid(s)", r.woken, len(r.tally.pids)), "1, 1 pid", r.woken == 1 && onePID, ""},
	}
}

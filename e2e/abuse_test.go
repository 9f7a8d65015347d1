package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// The abuse suite (issue 10, item 10): each subtest starts its own reaper binary,
// attacks it with one kind of hostile traffic, checks that every answer is the
// documented one, and measures the process before, during and after the attack:
// resident memory (VmRSS; the peak is VmHWM, reset before the attack), threads and
// open files from /proc, and the goroutines left once the attack is over (the
// binary has no endpoint that counts them: the test sends SIGQUIT, and the Go
// runtime writes every goroutine's stack to stderr before the process exits). A
// leak of one goroutine or one connection per attacking connection shows in the
// client connections, open files and goroutines left, which are bounded far below
// the attack's size. The table of figures is printed at the end (go test -v -run
// Abuse ./e2e/); docs/reliability.md lists the attacks and what they check.
func TestAbuse(t *testing.T) {
	table := &abuseTable{}
	t.Cleanup(func() { table.print(t) })
	t.Run("slowloris_headers", func(t *testing.T) { abuseSlowlorisHeaders(t, table) })
	t.Run("slowloris_bodies", func(t *testing.T) { abuseSlowlorisBodies(t, table) })
	t.Run("held_bodies_in_memory", func(t *testing.T) { abuseHeldBodies(t, table) })
	t.Run("held_clients_leave", func(t *testing.T) { abuseHeldClientsLeave(t, table) })
	t.Run("flood_beyond_max_held", func(t *testing.T) { abuseFlood(t, table) })
	t.Run("oversized_headers", func(t *testing.T) { abuseOversizedHeaders(t, table) })
	t.Run("malformed_reaper_header", func(t *testing.T) { abuseReaperHeader(t, table) })
	t.Run("host_variants", func(t *testing.T) { abuseHosts(t, table) })
	t.Run("h2_rapid_reset", func(t *testing.T) { abuseRapidReset(t, table) })
}

// abuseToken is the admin token of the reapers startAbuse starts.
const abuseToken = "e2e-abuse-admin-token"

// abuseEnv is one reaper under attack, and the backend of its plain route.
type abuseEnv struct {
	p *reaperProc
	// hello counts the requests of the plain route's backend in flight, and
	// those it finished.
	helloIn, helloDone atomic.Int64
	echoAddr           string // the echo app's address (a demo app that boots at once)
}

// startAbuse starts a reaper with these routes:
//
//   - hello.localhost: a plain route (no reaper plugin) to a backend of the test
//     that reads the whole body and answers "hello";
//   - flood.test, slowheld.test, bigbody.test, quiet.test, noisy.test: apps that
//     never open their port (a wake never ends), with the hold behaviour (flood:
//     max_held 100; slowheld and bigbody: fail_timeout 3s) or unavailable (quiet,
//     noisy);
//   - echo.test: the demo app, which boots at once, with the hold behaviour.
//
// The node reads headers for 2 s at most, waits 1 s at most for the next bytes of
// a body, and tls serves HTTPS with HTTP/2. It
// waits until every app that never boots has been seen Down.
func startAbuse(t *testing.T, tls string) *abuseEnv {
	t.Helper()
	e := &abuseEnv{echoAddr: freeport.Addr(t)}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.helloIn.Add(1)
		defer e.helloDone.Add(1)
		defer e.helloIn.Add(-1)
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		io.WriteString(w, "hello")
	}))
	t.Cleanup(backend.Close)
	never := []string{"flood", "slowheld", "bigbody", "quiet", "noisy"}
	var b strings.Builder
	fmt.Fprintf(&b, `
node:
  id: e2e
  listen: 127.0.0.1:0
  admin_listen: 127.0.0.1:0
  admin_token: %s
  data_dir: %%DIR%%/data
  shutdown_timeout: 5s
  read_header_timeout: 2s
  body_idle_timeout: 1s
%sreaper:
  job_interval: 1s
  fast_interval: 200ms
paas:
  driver: process
  apps:
`, abuseToken, tls)
	addrs := map[string]string{"echo": e.echoAddr}
	for _, id := range never {
		// sleep never listens on its ready address: a wake never ends.
		addrs[id] = freeport.Addr(t)
		fmt.Fprintf(&b, "    - {id: %s, command: [sleep, \"600\"], ready: {tcp: %q}, stop_timeout: 1s}\n", id, addrs[id])
	}
	fmt.Fprintf(&b, "    - {id: echo, command: [%q, --listen, %q, --name, echo], ready: {tcp: %q}, stop_timeout: 3s}\n",
		"%DEMOAPP%", e.echoAddr, e.echoAddr)
	b.WriteString("routes:\n")
	fmt.Fprintf(&b, "  - {id: hello, frontend: {domains: [hello.localhost]}, backend: {targets: [%q]}}\n", backend.URL)
	plugins := map[string]string{
		"flood":    "fail_timeout: 60s, max_held: 100",
		"slowheld": "fail_timeout: 3s",
		"bigbody":  "fail_timeout: 3s",
		"quiet":    "fail_timeout: 60s, api_behavior: unavailable",
		"noisy":    "fail_timeout: 60s, api_behavior: unavailable",
		"echo":     "fail_timeout: 20s",
	}
	for _, id := range append(never, "echo") {
		fmt.Fprintf(&b, "  - id: %s\n    frontend: {domains: [%s.test]}\n    backend: {targets: [\"http://%s\"]}\n", id, id, addrs[id])
		fmt.Fprintf(&b, "    plugins: [{plugin: reaper, config: {app_id: %s, grace_period: 60s, %s}}]\n", id, plugins[id])
	}
	e.p = startReaper(t, t.TempDir(), b.String())
	for _, id := range never {
		e.p.waitLog(func(l map[string]any) bool {
			return l["msg"] == "app status changed" && l["app"] == id && l["to"] == "Down"
		}, 15*time.Second)
	}
	return e
}

// held is the admin API's count of requests held for app.
func (e *abuseEnv) held(t *testing.T, app string) int {
	t.Helper()
	v := e.admin(t, app)
	return int(v["held"].(float64))
}

// admin is the admin API's view of app.
func (e *abuseEnv) admin(t *testing.T, app string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+e.p.admin+"/api/apps/"+app, nil)
	req.Header.Set("Authorization", "Bearer "+abuseToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(readAll(t, resp)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitHeld polls the admin API until want requests are held for app.
func (e *abuseEnv) waitHeld(t *testing.T, app string, want int) {
	t.Helper()
	var got int
	if !testwait.Until(15*time.Second, func() bool { got = e.held(t, app); return got == want }) {
		t.Fatalf("%s: %d held, want %d", app, got, want)
	}
}

// hello sends a normal request on the plain route and checks its answer.
func (e *abuseEnv) hello(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.p.url("/"), nil)
	req.Host = "hello.localhost"
	req.Close = true // no connection left open after the attack but the attackers'
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a normal request: %v", err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || body != "hello" {
		t.Fatalf("a normal request: %d %q", resp.StatusCode, body)
	}
}

// dialRaw opens a TCP connection to the gateway, closed with the test.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawResponse reads one response from c, with its body, within limit.
func rawResponse(c net.Conn, br *bufio.Reader, limit time.Duration) (*http.Response, string, error) {
	c.SetReadDeadline(time.Now().Add(limit))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// closedAfter reads c until the server closes it, within limit: it returns what
// was read and whether the connection ended (EOF or reset) rather than timed out.
func closedAfter(c net.Conn, br io.Reader, limit time.Duration) (string, bool) {
	c.SetReadDeadline(time.Now().Add(limit))
	b, err := io.ReadAll(br)
	var ne net.Error
	return string(b), !(errors.As(err, &ne) && ne.Timeout())
}

// usage is what /proc says of a process at one moment.
type usage struct {
	rss, threads, fds int64
}

func readUsage(pid int) (usage, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return usage{}, false
	}
	var u usage
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		var n int64
		fmt.Sscanf(strings.TrimSpace(v), "%d", &n)
		switch k {
		case "VmRSS":
			u.rss = n << 10
		case "Threads":
			u.threads = n
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return usage{}, false
	}
	u.fds = int64(len(fds))
	return u, true
}

// meter measures a reaper through one attack: the usage before, the peak (sampled
// every 10 ms, and VmHWM for memory), the usage after, and the goroutines left.
type meter struct {
	t      *testing.T
	p      *reaperProc
	name   string
	conns  int
	before usage

	mu   sync.Mutex
	peak usage
	stop chan struct{}
	done chan struct{}
}

// measure starts measuring p for an attack of conns connections.
func measure(t *testing.T, p *reaperProc, name string, conns int) *meter {
	t.Helper()
	pid := p.cmd.Process.Pid
	// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
	before, ok := readUsage(pid)
	if !ok {
		t.Fatal("reaper's /proc entry is gone")
	}
	m := &meter{t: t, p: p, name: name, conns: conns, before: before, peak: before,
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
			if u, ok := readUsage(pid); ok {
				m.mu.Lock()
				m.peak = usage{max(m.peak.rss, u.rss), max(m.peak.threads, u.threads), max(m.peak.fds, u.fds)}
				m.mu.Unlock()
			}
		}
	}()
	t.Cleanup(m.halt)
	return m
}

func (m *meter) halt() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// abuseBounds are the limits an attack must stay within.
type abuseBounds struct {
	peakGrowth int64 // RSS at the peak, above the RSS before
	goroutines int   // goroutines left once the attack is over
}

// finish ends the measure once the attack is over: it waits for the open files to
// come back to their count before the attack (one file per client connection:
// a connection the gateway kept would stay), reads the usage after, counts the
// goroutines left (SIGQUIT: the process exits), checks the bounds and adds the
// row to the table.
func (m *meter) finish(table *abuseTable, b abuseBounds) {
	t := m.t
	t.Helper()
	pid := m.p.cmd.Process.Pid
	var after usage
	var clients int
	// Every client connection closed, and the open files back to their count
	// before the attack, or nearly (apps the attack woke have a log file).
	settled := testwait.Until(10*time.Second, func() bool {
		u, ok := readUsage(pid)
		after, clients = u, clientConns(t, pid, m.p.gateway)
		return ok && clients == 0 && u.fds <= m.before.fds+fdSlack
	})
	m.halt()
	if peak := procStatus(t, pid, "VmHWM:"); peak > m.peak.rss {
		m.peak.rss = peak
	}
	gs := goroutinesLeft(t, m.p)
	row := abuseRow{name: m.name, conns: m.conns, before: m.before, peak: m.peak, after: after, goroutines: gs}
	table.add(row)
	if !settled {
		t.Errorf("10 s after the attack: %d client connections, %d open files (%d before it): connections are kept", clients, after.fds, m.before.fds)
	}
	if g := m.peak.rss - m.before.rss; g > b.peakGrowth {
		t.Errorf("RSS grew by %.1f MiB at the peak, want at most %.1f MiB", mib(g), mib(b.peakGrowth))
	}
	if g := after.rss - m.before.rss; g > b.peakGrowth {
		t.Errorf("RSS after the attack %.1f MiB above before, want at most %.1f MiB", mib(g), mib(b.peakGrowth))
	}
	if m.peak.threads > maxThreads {
		t.Errorf("%d threads at the peak, want at most %d", m.peak.threads, maxThreads)
	}
	if gs > b.goroutines {
		t.Errorf("%d goroutines left after the attack, want at most %d", gs, b.goroutines)
	}
}

// fdSlack is how many more files the node may have open after an attack than
// before it: apps the attack woke (their log file, a pidfd), keep-alive
// connections to backends. A connection kept per attacking client would be
// hundreds.
const fdSlack = 16

// maxThreads bounds the OS threads of the reaper process: Go multiplexes
// goroutines on a few threads, and network waits take none.
const maxThreads = 40

// abuseGoroutines bounds the goroutines left after an attack: the node's own
// (job, store, listeners, process driver, waiter loops) are a few dozen; a leak
// of one per attacking connection would be hundreds.
const abuseGoroutines = 80

// goroutineHeader starts each goroutine of a Go traceback ("goroutine 7 [select]:",
// or "goroutine 7 gp=0x… m=nil [select]:"); goroutine 0 is a thread's scheduler
// stack, not a goroutine.
var goroutineHeader = regexp.MustCompile(`^goroutine [1-9][0-9]* .*\[.*\]:$`)

// goroutinesLeft makes reaper dump its goroutines and exit (SIGQUIT), and counts
// them.
func goroutinesLeft(t *testing.T, p *reaperProc) int {
	t.Helper()
	p.signal(syscall.SIGQUIT)
	p.wait(10 * time.Second)
	n := 0
	byFrame := map[string]int{} // goroutines by the first function of theirs in their stack
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, line := range p.raw {
		if goroutineHeader.MatchString(line) {
			n++
			byFrame[firstFrame(p.raw[i+1:])]++
		}
	}
	if n == 0 {
		t.Fatal("SIGQUIT printed no goroutine")
	}
	if n > abuseGoroutines {
		var top []string
		for f, c := range byFrame {
			if c > 5 {
				top = append(top, fmt.Sprintf("%5d %s", c, f))
			}
		}
		t.Logf("goroutines by their first frame:\n%s", strings.Join(top, "\n"))
	}
	return n
}

// firstFrame is the first function of a goroutine's stack (its lines) outside the
// runtime and the standard library's waiting functions.
func firstFrame(lines []string) string {
	for _, l := range lines {
		if l == "" {
			break
		}
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "runtime.") || strings.HasPrefix(l, "internal/") ||
			strings.HasPrefix(l, "sync.") || strings.HasPrefix(l, "time.") {
			continue
		}
		fn, _, _ := strings.Cut(l, "(0x")
		return fn
	}
	return "?"
}

// clientConns counts the TCP connections that process pid holds on its gateway
// listener's port (gateway, "host:port"): its sockets (/proc/pid/fd) found in
// the network namespace's table of TCP sockets with that local port, the
// listener aside.
func clientConns(t *testing.T, pid int, gateway string) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(gateway)
	var want int
	fmt.Sscanf(port, "%d", &want)
	mine := map[string]bool{}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			mine[strings.TrimSuffix(inode, "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"tcp", "tcp6"} {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] == "0A" || !mine[f[9]] { // 0A: listening
				continue
			}
			_, local, _ := strings.Cut(f[1], ":")
			var p int
			fmt.Sscanf(local, "%X", &p)
			if p == want {
				n++
			}
		}
	}
	return n
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// abuseTable collects one row per attack, printed at the end.
type abuseTable struct {
	mu   sync.Mutex
	rows []abuseRow
}

type abuseRow struct {
	name         string
	conns        int
	before, peak usage
	after        usage
	goroutines   int
}

func (tb *abuseTable) add(r abuseRow) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, r)
}

func (tb *abuseTable) print(t *testing.T) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-24s %6s | %-23s | %-14s | %-16s | %s\n", "attack", "conns", "RSS MiB before/peak/after", "threads b/p/a", "open files b/p/a", "goroutines after")
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "%-24s %6d | %6.1f / %6.1f / %6.1f | %4d / %3d / %3d | %4d / %4d / %4d | %d\n",
			r.name, r.conns, mib(r.before.rss), mib(r.peak.rss), mib(r.after.rss),
			r.before.threads, r.peak.threads, r.after.threads, r.before.fds, r.peak.fds, r.after.fds, r.goroutines)
	}
	t.Log(b.String())
}

package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// usage is what a reaper process is using at one moment.
type usage struct {
	rss, threads, fds int64 // from /proc
	goroutines        int64 // go_goroutines, from the admin listener's /metrics
}

// readUsage reads the usage of p from /proc, and its goroutines from /metrics
// when goroutines is set.
func readUsage(p *reaperProc, goroutines bool) (usage, bool) {
	pid := p.cmd.Process.Pid
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
	if goroutines {
		if u.goroutines, err = goroutinesOf(p); err != nil {
			return usage{}, false
		}
	}
	return u, true
}

// goroutinesOf reads go_goroutines from p's metrics.
func goroutinesOf(p *reaperProc) (int64, error) {
	req, _ := http.NewRequest("GET", "http://"+p.admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+abuseToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			var n int64
			_, err := fmt.Sscanf(v, "%d", &n)
			return n, err
		}
	}
	return 0, fmt.Errorf("no go_goroutines in /metrics (%s)", resp.Status)
}

// meter measures a reaper through one attack: the usage before, the peak (from
// /proc every 10 ms, goroutines every 50 ms, and VmHWM for memory), and the usage
// once the attack is over.
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
	// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.cmd.Process.Pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
	before, ok := readUsage(p, true)
	if !ok {
		t.Fatal("reaper's /proc entry or /metrics is gone")
	}
	m := &meter{t: t, p: p, name: name, conns: conns, before: before, peak: before,
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for k := 1; ; k++ {
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
			if u, ok := readUsage(p, k%5 == 0); ok {
				m.mu.Lock()
				m.peak = usage{max(m.peak.rss, u.rss), max(m.peak.threads, u.threads), max(m.peak.fds, u.fds),
					max(m.peak.goroutines, u.goroutines)}
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

// Bounds of every attack.
const (
	// abuseGoroutines bounds the goroutines left once an attack is over: an
	// idle node has about 20 (job, store, listeners, process driver), plus a
	// few for the apps an attack woke and for idle connections to backends; a
	// leak of one per attacking connection would be hundreds.
	abuseGoroutines = 80
	// fdSlack is how many more files the node may have open after an attack
	// than before it: apps the attack woke (their log file, a pidfd),
	// keep-alive connections to backends. A connection kept per attacking
	// client would be hundreds.
	fdSlack = 16
	// maxThreads bounds the OS threads of the reaper process: Go multiplexes
	// goroutines on a few threads, and network waits take none.
	maxThreads = 40
)

// finish ends the measure once the attack is over: it waits (10 s at most) until
// the node holds no client connection, its open files are back to their count
// before the attack or nearly, and its goroutines are within their bound; then
// it checks the bounds (peakGrowth: of the RSS at the peak, above the RSS before)
// and adds the row to the table. Goroutines past their
// bound are shown by the first function of their stacks (SIGQUIT: the process
// prints them and exits).
func (m *meter) finish(table *abuseTable, peakGrowth int64) {
	t := m.t
	t.Helper()
	pid := m.p.cmd.Process.Pid
	var after usage
	var clients int
	settled := testwait.Until(10*time.Second, func() bool {
		u, ok := readUsage(m.p, true)
		after, clients = u, clientConns(t, pid, m.p.gateway)
		return ok && clients == 0 && u.fds <= m.before.fds+fdSlack && u.goroutines <= abuseGoroutines
	})
	m.halt()
	if peak := procStatus(t, pid, "VmHWM:"); peak > m.peak.rss {
		m.peak.rss = peak
	}
	table.add(abuseRow{name: m.name, conns: m.conns, before: m.before, peak: m.peak, after: after})
	if !settled {
		t.Errorf("10 s after the attack: %d client connections, %d open files (%d before it), %d goroutines (%d before it, at most %d)",
			clients, after.fds, m.before.fds, after.goroutines, m.before.goroutines, abuseGoroutines)
		if after.goroutines > abuseGoroutines {
			t.Logf("goroutines by the first function of theirs in their stack:\n%s", goroutineSummary(t, m.p))
		}
	}
	if g := m.peak.rss - m.before.rss; g > peakGrowth {
		t.Errorf("RSS grew by %.1f MiB at the peak, want at most %.1f MiB", mib(g), mib(peakGrowth))
	}
	if g := after.rss - m.before.rss; g > peakGrowth {
		t.Errorf("RSS after the attack %.1f MiB above before, want at most %.1f MiB", mib(g), mib(peakGrowth))
	}
	if m.peak.threads > maxThreads {
		t.Errorf("%d threads at the peak, want at most %d", m.peak.threads, maxThreads)
	}
}

// goroutineHeader starts each goroutine of a Go traceback ("goroutine 7 [select]:",
// or "goroutine 7 gp=0x… m=nil [select]:"); goroutine 0 is a thread's scheduler
// stack, not a goroutine.
var goroutineHeader = regexp.MustCompile(`^goroutine [1-9][0-9]* .*\[.*\]:$`)

// goroutineSummary makes reaper print its goroutines and exit (SIGQUIT), and
// counts them by the first function of theirs in their stack.
func goroutineSummary(t *testing.T, p *reaperProc) string {
	t.Helper()
	p.signal(syscall.SIGQUIT)
	p.wait(10 * time.Second)
	byFrame := map[string]int{}
	p.mu.Lock()
	for i, line := range p.raw {
		if goroutineHeader.MatchString(line) {
			byFrame[firstFrame(p.raw[i+1:])]++
		}
	}
	p.mu.Unlock()
	var top []string
	for f, c := range byFrame {
		if c > 2 {
			top = append(top, fmt.Sprintf("%5d %s", c, f))
		}
	}
	return strings.Join(top, "\n")
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
	name                string
	conns               int
	before, peak, after usage
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
	fmt.Fprintf(&b, "\n%-24s %5s | %-24s | %-11s | %-12s | %s\n", "attack", "conns", "RSS MiB before/peak/after", "threads b/p/a", "files b/p/a", "goroutines b/p/a")
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "%-24s %5d | %6.1f / %6.1f / %6.1f | %3d/%3d/%3d | %3d/%4d/%3d | %3d/%4d/%3d\n",
			r.name, r.conns, mib(r.before.rss), mib(r.peak.rss), mib(r.after.rss),
			r.before.threads, r.peak.threads, r.after.threads, r.before.fds, r.peak.fds, r.after.fds,
			r.before.goroutines, r.peak.goroutines, r.after.goroutines)
	}
	t.Log(b.String())
}

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// The cost of forward-auth for an awake app (issue 24, item 5): the same
// requests through Caddy to the same app, with the auth call to reaper and
// without, side by side; and the CPU reaper spent per auth call, from its
// /proc/<pid>/stat. A measurement, not a check: it runs with
// REAPER_FORWARDAUTH_COST=1 (and Caddy), prints the figures, and fails only
// when a request does.
func TestForwardAuth_CostThroughCaddy(t *testing.T) {
	if os.Getenv("REAPER_FORWARDAUTH_COST") != "1" {
		t.Skip("a measurement: set REAPER_FORWARDAUTH_COST=1 to run it")
	}
	web := app{id: "web", addr: freeport.Addr(t)}
	p, auth := startAuthReaper(t, "", web)
	listen := freeport.Addr(t)
	_, port, _ := net.SplitHostPort(listen)
	sites := recipeFor(t, docBlock(t, "caddyfile"), "http://web.test:"+port, web.addr, auth, listen) +
		"http://alone.test:" + port + " {\n\treverse_proxy " + web.addr + "\n}\n"
	startCaddy(t, listen, sites)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	get := func(host string) {
		req, _ := http.NewRequest("GET", "http://"+listen+"/", nil)
		req.Host = host
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", host, resp.StatusCode)
		}
	}
	get("web.test") // wakes the app, held until it is up
	const n = 5000
	run := func(host string) time.Duration {
		for range 200 { // warm connections and caches
			get(host)
		}
		start := time.Now()
		for range n {
			get(host)
		}
		return time.Since(start) / n
	}
	pid := p.cmd.Process.Pid
	// reaper's CPU while no auth call comes (its job's passes, its timers),
	// measured over the run without forward-auth, is taken off the other.
	idle0, idleStart := cpuTicks(t, pid), time.Now()
	alone := run("alone.test")
	idleRate := float64(cpuTicks(t, pid)-idle0) * float64(10*time.Millisecond) / float64(time.Since(idleStart))
	lines0 := len(p.logs())
	cpu0, start := cpuTicks(t, pid), time.Now()
	withAuth := run("web.test")
	spent := float64(cpuTicks(t, pid)-cpu0)*float64(10*time.Millisecond) - idleRate*float64(time.Since(start))
	cpu := time.Duration(spent / (n + 200))
	t.Logf("log lines per auth call: %.2f", float64(len(p.logs())-lines0)/(n+200))
	t.Logf("through Caddy, one client: alone %s a request, with forward-auth %s (x%.2f); reaper's CPU %s per auth call beyond its idle %.1f%% (issue 24's target: at most 30µs)",
		alone, withAuth, float64(withAuth)/float64(alone), cpu, idleRate*100)
}

// cpuTicks is the process's user and system time, in clock ticks (1/100 s).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces), from field 3 on.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return utime + stime
}

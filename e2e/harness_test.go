// Package e2e runs the real reaper binary against real backends: the demo app as a
// process, in-process httptest servers, real signals.
package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
)

// bins holds the binaries built once for the whole package, without the race
// detector: the memory bounds are about the binary users run.
var bins struct{ reaper, demoapp string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reaper-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.reaper = filepath.Join(dir, "reaper")
	bins.demoapp = filepath.Join(dir, "demoapp")
	for pkg, out := range map[string]string{"../cmd/reaper": bins.reaper, "../cmd/demoapp": bins.demoapp} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg, ":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	dockertest.RemoveImages() // the images the docker tests built, if any
	os.RemoveAll(dir)
	os.Exit(code)
}

// reaperProc is a running `reaper serve`.
type reaperProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	dir     string
	config  string
	gateway string // host:port
	admin   string
	exited  chan struct{}
	err     error
	// sockets are handed to reaper as a service manager does (socket
	// activation), named by socketNames.
	sockets     []*os.File
	socketNames string

	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	seen  chan struct{} // closed and replaced on every new line
}

// writeConfig writes a configuration file into dir; %DIR% in it becomes dir.
func writeConfig(t *testing.T, dir, yaml string) string {
	t.Helper()
	path := filepath.Join(dir, "reaper.yaml")
	yaml = strings.ReplaceAll(yaml, "%DIR%", dir)
	yaml = strings.ReplaceAll(yaml, "%DEMOAPP%", bins.demoapp)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startReaper runs reaper on the configuration (listening on port 0 unless the
// configuration says otherwise) and waits until it serves.
func startReaper(t *testing.T, dir, yaml string) *reaperProc {
	t.Helper()
	return startReaperOn(t, dir, yaml, "")
}

// startReaperOn runs reaper as startReaper does, handing it sockets as a service
// manager does; names is LISTEN_FDNAMES.
func startReaperOn(t *testing.T, dir, yaml, names string, sockets ...*os.File) *reaperProc {
	t.Helper()
	p := &reaperProc{t: t, dir: dir, config: writeConfig(t, dir, yaml), exited: make(chan struct{}), seen: make(chan struct{}),
		sockets: sockets, socketNames: names}
	p.start()
	t.Cleanup(func() {
		p.kill()
		killApps(t, dir)
	})
	return p
}

// killApps ends the apps reaper's process driver left running under dir (apps
// outlive reaper on purpose): the process groups its pid files name.
func killApps(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "process", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec struct {
			PGID int `json:"pgid"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.PGID > 1 {
			syscall.Kill(-rec.PGID, syscall.SIGKILL)
		}
	}
}

func (p *reaperProc) start() {
	t := p.t
	t.Helper()
	args := []string{"serve", "--config", p.config, "--log-format", "json", "--log-level", "debug"}
	p.cmd = exec.Command(bins.reaper, args...)
	p.cmd.Env = append(os.Environ(), "REAPER_TEST=1")
	if len(p.sockets) > 0 {
		// LISTEN_PID must be reaper's own pid: the shell sets it, then becomes
		// reaper.
		p.cmd = exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, bins.reaper}, args...)...)
		p.cmd.Env = append(os.Environ(), "REAPER_TEST=1", fmt.Sprintf("LISTEN_FDS=%d", len(p.sockets)), "LISTEN_FDNAMES="+p.socketNames)
		p.cmd.ExtraFiles = p.sockets
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stderr)
	line := p.waitLog(func(l map[string]any) bool { return l["msg"] == "reaper started" }, 20*time.Second)
	_ = line
	for _, l := range p.logs() {
		switch l["msg"] {
		case "gateway listening":
			p.gateway = l["addr"].(string)
		case "admin listening":
			p.admin = l["addr"].(string)
		}
	}
}

func (p *reaperProc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		var m map[string]any
		if json.Unmarshal([]byte(text), &m) != nil {
			m = map[string]any{"msg": text}
		}
		p.mu.Lock()
		p.lines = append(p.lines, m)
		p.raw = append(p.raw, text)
		close(p.seen)
		p.seen = make(chan struct{})
		p.mu.Unlock()
	}
	p.err = p.cmd.Wait()
	close(p.exited)
}

func (p *reaperProc) logs() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.lines...)
}

// logText is every log line so far, as written.
func (p *reaperProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw, "\n")
}

// waitLog waits for a log line matching pred, failing the test after limit.
func (p *reaperProc) waitLog(pred func(map[string]any) bool, limit time.Duration) map[string]any {
	p.t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	next := 0
	for {
		p.mu.Lock()
		lines, seen := p.lines[next:], p.seen
		next = len(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			if pred(l) {
				return l
			}
		}
		select {
		case <-seen:
		case <-p.exited:
			p.t.Fatalf("reaper exited (%v) before the expected log line; logs:\n%s", p.err, p.logText())
		case <-deadline.C:
			p.t.Fatalf("no such log line after %v; logs:\n%s", limit, p.logText())
		}
	}
}

// signal sends sig to reaper.
func (p *reaperProc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for reaper to exit and returns its exit code.
func (p *reaperProc) wait(limit time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(limit):
		p.t.Fatalf("reaper still runs after %v", limit)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *reaperProc) kill() {
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// url is a URL on the gateway for host and path.
func (p *reaperProc) url(path string) string { return "http://" + p.gateway + path }

// get sends a request for host through the gateway.
func (p *reaperProc) request(method, host, path string, body io.Reader, header ...string) (*http.Response, error) {
	req, err := http.NewRequest(method, p.url(path), body)
	if err != nil {
		return nil, err
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return http.DefaultClient.Do(req)
}

// readAll reads and closes a response body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// vmHWM returns the peak resident memory of a process, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	return procStatus(t, pid, "VmHWM:")
}

func procStatus(t *testing.T, pid int, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, key)), "%d", &kb)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

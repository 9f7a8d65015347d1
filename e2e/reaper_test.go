package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// app describes one app run by reaper's process driver behind a route: the demo
// app, unless command is set.
type app struct {
	id, addr string
	flags    string   // extra demoapp flags, as YAML list items: `"--boot-delay", "1s"`
	command  []string // the app's whole command line, in place of the demo app's
	plugin   string   // extra reaper plugin config keys, as YAML flow items
}

func reaperConfig(apps ...app) string {
	var b strings.Builder
	b.WriteString(`
node:
  id: e2e
  listen: 127.0.0.1:0
  admin_listen: 127.0.0.1:0
  data_dir: %DIR%/data
  shutdown_timeout: 5s
  max_wakes_per_client: 0 # the tests wake apps again and again from 127.0.0.1
reaper:
  job_interval: 1s
  fast_interval: 200ms
paas:
  driver: process
  apps:
`)
	for _, a := range apps {
		command := fmt.Sprintf("%q, \"--listen\", %q, \"--name\", %q", "%DEMOAPP%", a.addr, a.id)
		if a.flags != "" {
			command += ", " + a.flags
		}
		if a.command != nil {
			quoted := make([]string, len(a.command))
			for i, arg := range a.command {
				quoted[i] = strconv.Quote(arg)
			}
			command = strings.Join(quoted, ", ")
		}
		fmt.Fprintf(&b, "    - id: %s\n      command: [%s]\n      ready: {tcp: %q}\n      stop_timeout: 3s\n", a.id, command, a.addr)
	}
	b.WriteString("routes:\n")
	for _, a := range apps {
		extra := ""
		if a.plugin != "" {
			extra = ", " + a.plugin
		}
		fmt.Fprintf(&b, "  - id: %s\n    frontend: {domains: [%s.test]}\n    backend: {targets: [\"http://%s\"]}\n    plugins:\n      - plugin: reaper\n        config: {app_id: %s, grace_period: 60s, fail_timeout: 20s%s}\n",
			a.id, a.id, a.addr, a.id, extra)
	}
	return b.String()
}

// appAnswer is what the demo app answers on /.
type appAnswer struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

func getApp(t *testing.T, p *reaperProc, host string) (int, appAnswer, http.Header) {
	t.Helper()
	resp, err := p.request("GET", host, "/", nil, "Accept", "application/json")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	var a appAnswer
	if resp.StatusCode == 200 {
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
	}
	return resp.StatusCode, a, resp.Header
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// starts counts the app starts reaper logged.
func starts(p *reaperProc, id string) int {
	n := 0
	for _, l := range p.logs() {
		if l["msg"] == "app woken" && l["app"] == id {
			n++
		}
	}
	return n
}

// crowd runs send(i) for i from 0 to n-1 at once and returns how many answers each
// app process gave (send returns the pid of the app that answered); each error
// fails the test.
func crowd(t *testing.T, n int, send func(i int) (pid int, err error)) map[int]int {
	t.Helper()
	var wg sync.WaitGroup
	pids := make(chan int, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			pid, err := send(i)
			if err != nil {
				errs <- err
				return
			}
			pids <- pid
		})
	}
	wg.Wait()
	close(pids)
	close(errs)
	for err := range errs {
		t.Errorf("request: %v", err)
	}
	seen := map[int]int{}
	for pid := range pids {
		seen[pid]++
	}
	return seen
}

func TestReaper_ConcurrentRequestsToASleepingAppStartItOnce(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`}
	p := startReaper(t, t.TempDir(), reaperConfig(a))
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "app status changed" && l["to"] == "Down" }, 10*time.Second)

	seen := crowd(t, 200, func(int) (int, error) {
		resp, err := p.request("GET", "web.test", "/", nil, "Accept", "application/json")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var ans appAnswer
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&ans) != nil {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return ans.PID, nil
	})
	if len(seen) != 1 {
		t.Errorf("answers came from %d processes (%v), want one", len(seen), seen)
	}
	if got := starts(p, "web"); got != 1 {
		t.Errorf("starts = %d, want exactly 1", got)
	}
}

func TestReaper_HeldChunkedPOSTArrivesIntact(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "500ms"`}
	p := startReaper(t, t.TempDir(), reaperConfig(a))
	p.waitLog(func(l map[string]any) bool { return l["to"] == "Down" }, 10*time.Second)

	body := make([]byte, 1<<20)
	rand.Read(body)
	sum := sha256.Sum256(body)
	// Wrapped so that the client sends it chunked, with no Content-Length.
	resp, err := p.request("POST", "web.test", "/upload", struct{ io.Reader }{bytes.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		Bytes  int    `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	if b := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal([]byte(b), &up) != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if up.Bytes != len(body) || up.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the app got %d bytes (%s), want %d intact", up.Bytes, up.SHA256, len(body))
	}
}

func TestReaper_AnswersWhileAsleep(t *testing.T) {
	web := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`,
		plugin: `monitoring_filters: [{source: user_agent, regex: "(?i)uptimerobot"}]`}
	api := app{id: "api", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`, plugin: `api_behavior: unavailable`}
	p := startReaper(t, t.TempDir(), reaperConfig(web, api))
	testwait.For(t, 10*time.Second, "both apps Down", func() bool {
		n := 0
		for _, l := range p.logs() {
			if l["to"] == "Down" {
				n++
			}
		}
		return n == 2
	})

	// A monitor: 200 without waking anything.
	resp, err := p.request("GET", "web.test", "/", nil, "User-Agent", "UptimeRobot/2.0")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"monitoring":true`) || resp.Header.Get("CleverCloud-Reaper-Status") != "Down" {
		t.Errorf("monitor: %d %s", resp.StatusCode, body)
	}
	// The status header.
	resp, _ = p.request("GET", "web.test", "/", nil, "CleverCloud-Reaper", "status")
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"status":"Down"`) {
		t.Errorf("status: %d %s", resp.StatusCode, body)
	}
	if starts(p, "web") != 0 {
		t.Fatalf("a monitor or a status request woke the app")
	}

	// unavailable: 503 at once, and the app starts all the same.
	resp, _ = p.request("POST", "api.test", "/", strings.NewReader("x"))
	if body := readAll(t, resp); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "30" ||
		!strings.Contains(body, "the application is waking up, retry later") {
		t.Errorf("unavailable: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	testwait.For(t, 10*time.Second, "api answers once up", func() bool { code, _, _ := getApp(t, p, "api.test"); return code == 200 })

	// A browser: the waiting page, and the app wakes.
	resp, _ = p.request("GET", "web.test", "/", nil, "Accept", "text/html")
	body := readAll(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(body, "<html") {
		t.Errorf("browser: %d %v", resp.StatusCode, resp.Header)
	}
	// Polls: the gateway answers while it wakes, the app once it is up.
	testwait.For(t, 10*time.Second, "a poll reaches the app", func() bool {
		resp, err := p.request("HEAD", "web.test", "/", nil, "CleverCloud-Reaper", "poll", "Accept", "application/json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode == 503 && resp.Header.Get("CleverCloud-Reaper-Status") == "" {
			t.Fatalf("a 503 poll without the marker header")
		}
		return resp.StatusCode == 200 && resp.Header.Get("CleverCloud-Reaper-Status") == ""
	})
	if got := starts(p, "web"); got != 1 {
		t.Errorf("web starts = %d", got)
	}
}

func TestReaper_HoldPastFailTimeoutAnswers504(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1h"`}
	cfg := strings.Replace(reaperConfig(a), "fail_timeout: 20s", "fail_timeout: 2s", 1)
	p := startReaper(t, t.TempDir(), cfg)
	p.waitLog(func(l map[string]any) bool { return l["to"] == "Down" }, 10*time.Second)
	begin := time.Now()
	resp, err := p.request("GET", "web.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 504 || !strings.Contains(body, "the application did not wake up in time") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if held := time.Since(begin); held < 2*time.Second {
		t.Errorf("answered after %v, before the fail timeout", held)
	}
}

func TestReaper_AppThatCannotStartGoesToError(t *testing.T) {
	// One failed boot is enough to give up: without max_failed_boots, reaper
	// starts it again 4 times, over 15 s of back-off, before the Error.
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "5s", "--fail-after", "200ms"`, plugin: "max_failed_boots: 1"}
	p := startReaper(t, t.TempDir(), reaperConfig(a))
	p.waitLog(func(l map[string]any) bool { return l["to"] == "Down" }, 10*time.Second)
	resp, err := p.request("GET", "web.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(body, "the application could not be started") ||
		resp.Header.Get("CleverCloud-Reaper-Status") != "Error" {
		t.Errorf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, _ = p.request("GET", "web.test", "/", nil, "CleverCloud-Reaper", "status")
	if body := readAll(t, resp); !strings.Contains(body, `"status":"Error"`) {
		t.Errorf("status: %s", body)
	}
}

func TestReaper_IdleAppSleeps_OpenWebSocketKeepsItAwake(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t)}
	cfg := strings.Replace(reaperConfig(a), "grace_period: 60s", "grace_period: 2s", 1)
	p := startReaper(t, t.TempDir(), cfg)
	code, ans, _ := getApp(t, p, "web.test")
	if code != 200 {
		t.Fatalf("first request: %d", code)
	}
	// A WebSocket open for three grace periods: the app stays up.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+p.gateway+"/ws", &websocket.DialOptions{Host: "web.test"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		if err := conn.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, msg, err := conn.Read(ctx); err != nil || string(msg) != "ping" {
			t.Fatalf("echo: %q %v", msg, err)
		}
		time.Sleep(500 * time.Millisecond) // quiet between messages, still open
	}
	if !alive(ans.PID) {
		t.Fatalf("the app was stopped under an open WebSocket")
	}
	conn.Close(websocket.StatusNormalClosure, "")
	closed := time.Now()
	// Closed: it sleeps after a grace period from the close.
	testwait.For(t, 15*time.Second, "the app process is gone", func() bool { return !alive(ans.PID) })
	if slept := time.Since(closed); slept < 2*time.Second {
		t.Errorf("slept %v after the WebSocket closed, before the grace period", slept)
	}
}

func TestReaper_AppKilledByHandIsWokenByTheNextRequest(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t)}
	p := startReaper(t, t.TempDir(), reaperConfig(a))
	code, first, _ := getApp(t, p, "web.test")
	if code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the app is dead", func() bool { return !alive(first.PID) })
	code, second, _ := getApp(t, p, "web.test")
	if code != 200 || second.PID == first.PID {
		t.Errorf("after the kill: %d from pid %d (was %d), want 200 from a new process", code, second.PID, first.PID)
	}
}

func TestReaper_RestartMidIdleKeepsTheClock(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t)}
	cfg := strings.Replace(reaperConfig(a), "grace_period: 60s", "grace_period: 8s", 1)
	dir := t.TempDir()
	p := startReaper(t, dir, cfg)
	code, ans, _ := getApp(t, p, "web.test")
	if code != 200 {
		t.Fatalf("first request: %d", code)
	}
	used := time.Now()
	time.Sleep(3 * time.Second) // idle for a while, then reaper restarts
	p.signal(syscall.SIGTERM)
	if c := p.wait(10 * time.Second); c != 0 {
		t.Fatalf("exit %d", c)
	}
	if !alive(ans.PID) {
		t.Fatalf("the app died with reaper; it must outlive it")
	}
	restarted := time.Now()
	p2 := startReaper(t, dir, cfg)
	_ = p2
	testwait.For(t, 20*time.Second, "the app sleeps", func() bool { return !alive(ans.PID) })
	// Due 8 s after its last use; a restart that reset the clock would give 8 s
	// after the restart.
	if late := time.Since(used); late > 8*time.Second+3*time.Second {
		t.Errorf("slept %v after its last use (%v after the restart), want about 8s", late, time.Since(restarted))
	}
}

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Clever Cloud end-to-end tests of what goes wrong: rate limits, a slow API, the
// platform's own answers, credentials. The harness is in clever_test.go.

// waitAllStatus waits until reaper has logged every named app's move to status.
func (e *ccEnv) waitAllStatus(names []string, status string, limit time.Duration) {
	e.t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[e.ids[n]] = true
	}
	testwait.For(e.t, limit, "every app "+status, func() bool {
		seen := map[string]bool{}
		for _, l := range e.p.logs() {
			if id, _ := l["app"].(string); l["msg"] == "app status changed" && l["to"] == status && want[id] {
				seen[id] = true
			}
		}
		return len(seen) == len(want)
	})
}

// faulted counts the API calls the fake answered with a fault of that kind.
func (e *ccEnv) faulted(kind fakeclever.FaultKind) int {
	n := 0
	for _, c := range e.fake.Calls() {
		if c.Fault == string(kind) {
			n++
		}
	}
	return n
}

func TestClever_RateLimitStormDuring50WakesLosesNoAskAndStartsEachAppOnce(t *testing.T) {
	const n = 50
	apps := make([]ccApp, n)
	names := make([]string, n)
	for i := range apps {
		names[i] = fmt.Sprintf("app%02d", i)
		apps[i] = ccApp{name: names[i], state: fakeclever.StateShouldBeDown, failTimeout: "50s"}
	}
	e := newClever(t, fastClever(), apps...)
	e.waitAllStatus(names, "Down", 15*time.Second)
	begin := time.Now()

	// The storm: every API call is rate-limited (v2's 403 with body id 403, no
	// Retry-After, as the real API) while the requests arrive and for a while after.
	// Its length is part of the scenario, not a wait for something.
	e.fake.Inject("", fakeclever.Fault{Kind: fakeclever.FaultRateLimit403})
	stormOver := time.After(4 * time.Second)

	client := &http.Client{Timeout: 55 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	type result struct {
		name, got string
		code      int
		body      string
		err       error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, got, _, body, err := e.getJSON(client, name)
			results <- result{name: name, got: got, code: code, body: body, err: err}
		}()
	}

	<-stormOver
	limited403 := e.faulted(fakeclever.FaultRateLimit403)
	// Then a few apps' calls get a 429 with Retry-After, once each.
	e.fake.ClearFaults()
	for _, name := range names[:10] {
		e.fake.Inject(e.ids[name], fakeclever.Fault{Kind: fakeclever.FaultTooMany429, Count: 1, RetryAfter: time.Second})
	}

	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil || r.code != 200 || r.got != e.ids[r.name] {
			t.Errorf("%s: %d %q %v, want the app's 200", r.name, r.code, r.body, r.err)
		}
	}
	t.Logf("every request answered after %v; %d calls got the 403 rate limit, %d the 429",
		time.Since(begin), limited403, e.faulted(fakeclever.FaultTooMany429))
	for _, name := range names {
		id := e.ids[name]
		if s, r := e.fake.Starts(id), e.fake.Restarts(id); s != 1 || r != 0 {
			t.Errorf("%s: %d starts and %d restarts, want 1 and 0", name, s, r)
		}
	}
	if limited403 < 2 {
		t.Errorf("only %d calls were rate-limited: the storm did not happen", limited403)
	}
	if e.faulted(fakeclever.FaultTooMany429) == 0 {
		t.Errorf("no call got the 429")
	}
	// The driver slows down as a whole: a storm costs a few calls per back-off
	// step, not one per app and tick.
	if limited403 > n {
		t.Errorf("%d calls rate-limited during a 4 s storm: the driver hammers the API", limited403)
	}
}

func TestClever_PlatformNotRunning404NeverReachesAClient(t *testing.T) {
	opts := fastClever()
	opts.EdgeDelay = 2 * time.Second // the app says SHOULD_BE_UP; its domain still answers the 404
	e := newClever(t, opts, ccApp{name: "web", state: fakeclever.StateShouldBeDown, readyDelay: "0"})
	id := e.ids["web"]
	e.waitStatus("web", "Down", 10*time.Second)

	check := func(what string, code int, h http.Header) {
		t.Helper()
		switch {
		case code == 404:
			t.Fatalf("%s: the platform's 404 reached the client (%v)", what, h)
		case code == 503 && h.Get("CleverCloud-Reaper-Status") == "":
			t.Fatalf("%s: a 503 without the marker header", what)
		case code != 503 && code != 200:
			t.Fatalf("%s: status %d", what, code)
		}
	}
	code, _, h, _, err := e.getJSON(http.DefaultClient, "web")
	if err != nil {
		t.Fatal(err)
	}
	check("the held request", code, h)
	t.Logf("the held request got %d (marker %q)", code, h.Get("CleverCloud-Reaper-Status"))
	// Until the app answers: API calls, polls and page loads, in turn.
	i := 0
	testwait.For(t, 15*time.Second, "the app answers", func() bool {
		i++
		var resp *http.Response
		var err error
		switch i % 3 {
		case 0:
			resp, err = e.p.request("GET", "web.test", "/", nil, "Accept", "application/json")
		case 1:
			resp, err = e.p.request("HEAD", "web.test", "/", nil, "CleverCloud-Reaper", "poll")
		default:
			resp, err = e.p.request("GET", "web.test", "/", nil, "Accept", "text/html")
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		check(fmt.Sprintf("request %d", i), resp.StatusCode, resp.Header)
		return resp.StatusCode == 200
	})
	// The edge did answer reaper the 404 meanwhile: the test saw the case it is about.
	n404 := 0
	for _, c := range e.fake.EdgeCalls() {
		if c.App == id && c.Status == 404 {
			n404++
		}
	}
	if n404 == 0 {
		t.Errorf("the edge never answered the 404 to reaper: the case was not exercised")
	}
	if s, r := e.fake.Starts(id), e.fake.Restarts(id); s != 1 || r != 0 {
		t.Errorf("%d starts and %d restarts, want 1 and 0", s, r)
	}
}

func TestClever_TokenNeverInTheLog(t *testing.T) {
	e := newClever(t, fastClever(), ccApp{name: "web", state: fakeclever.StateShouldBeDown})
	e.waitStatus("web", "Down", 10*time.Second)
	// Faults on the way of the wake, so that error paths log too.
	e.fake.Inject("", fakeclever.Fault{Kind: fakeclever.Fault5xx, Count: 2})
	e.fake.Inject("", fakeclever.Fault{Kind: fakeclever.FaultRateLimit403, Count: 1})
	if code, got, _, body, err := e.getJSON(http.DefaultClient, "web"); err != nil || code != 200 || got != e.ids["web"] {
		t.Fatalf("wake: %d %s %v", code, body, err)
	}
	if e.faulted(fakeclever.Fault5xx) != 2 || e.faulted(fakeclever.FaultRateLimit403) != 1 {
		t.Errorf("the faults were not met")
	}
	if strings.Contains(e.p.logText(), e.token) {
		t.Errorf("the API token appears in reaper's log")
	}

	// A token the API refuses: the refusal is logged, the token is not.
	wrong := randomToken("cc-e2e-wrong-")
	p := e.startReaper(wrong)
	p.waitLog(func(l map[string]any) bool { return strings.Contains(fmt.Sprint(l), "the API token was refused") }, 10*time.Second)
	if strings.Contains(p.logText(), wrong) {
		t.Errorf("the refused API token appears in reaper's log")
	}
}

func TestClever_ExampleConfigurationPassesCheck(t *testing.T) {
	for _, tc := range []struct {
		file string
		env  []string
	}{
		{"../examples/clevercloud.yaml", []string{"CLEVER_CLOUD_API_TOKEN=dummy"}},
		{"../examples/clevercloud-fake.yaml", nil},
	} {
		cmd := exec.Command(bins.reaper, "check", "--config", tc.file)
		cmd.Env = append(cleanEnv(), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "driver clevercloud") {
			t.Errorf("reaper check %s: %v\n%s", tc.file, err, out)
		}
	}
	// The real example takes its token from the environment, never from the file.
	cmd := exec.Command(bins.reaper, "check", "--config", "../examples/clevercloud.yaml")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "CLEVER_CLOUD_API_TOKEN") {
		t.Errorf("without CLEVER_CLOUD_API_TOKEN: %v\n%s, want an error naming it", err, out)
	}
}

// cleanEnv is this process's environment without the variables the examples read.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CLEVER_") && !strings.HasPrefix(kv, "CC_") && !strings.HasPrefix(kv, "REAPER_") {
			out = append(out, kv)
		}
	}
	return out
}

// The state and the last deployment are two API calls. When they are far apart (a
// slow API, or calls held by the rate-limit gate), the state can be older than the
// deployment: SHOULD_BE_DOWN read before the deployment began, then the deployment
// read after it ended OK. That pair means "not begun yet when the state was read",
// not "stopped right after it woke up"; taken as the latter, with a wake still
// asked, reaper sends a second start to an app that is up, which restarts it.
func TestClever_SlowAPIDuringAWakeDoesNotRestartTheApp(t *testing.T) {
	// Every call naming the app takes 2 s, and is answered with the platform as it
	// is at the end of it. The deployment begins 3 s after the start and ends 0.5 s
	// later: the next look reads SHOULD_BE_DOWN (2 s after the start), then the
	// deployment, OK (4 s after it).
	opts := fakeclever.Options{DeployDelay: 3 * time.Second, BootTime: 500 * time.Millisecond, StopLinger: 300 * time.Millisecond}
	e := newClever(t, opts, ccApp{name: "web", state: fakeclever.StateShouldBeDown, failTimeout: "40s"})
	id := e.ids["web"]
	e.waitStatus("web", "Down", 10*time.Second)
	e.fake.Inject(id, fakeclever.Fault{Kind: fakeclever.FaultSlow, Delay: 2 * time.Second})

	type result struct {
		code      int
		got, body string
		err       error
	}
	done := make(chan result, 1)
	go func() {
		code, got, _, body, err := e.getJSON(&http.Client{Timeout: 50 * time.Second}, "web")
		done <- result{code, got, body, err}
	}()
	// While the start call is on its way, another caller asks for the app (as any
	// request during a long boot does): that ask stays until the app is up.
	testwait.For(t, 10*time.Second, "reaper starts the app", func() bool { return e.reaperStatus("web") == "WaitingForUp" })
	req, _ := http.NewRequest("POST", "http://"+e.p.admin+"/api/apps/"+id+"/_wake", nil)
	req.Header.Set("Authorization", "Bearer "+ccAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("admin wake: %d %s", resp.StatusCode, body)
	}

	r := <-done
	if r.err != nil || r.code != 200 || r.got != id {
		t.Errorf("held request: %d %s %v, want the app's 200", r.code, r.body, r.err)
	}
	if s, rs := e.fake.Starts(id), e.fake.Restarts(id); s != 1 || rs != 0 {
		t.Errorf("%d starts and %d restarts, want 1 and 0", s, rs)
	}
	for _, l := range e.p.logs() {
		if l["msg"] == "app status changed" && l["app"] == id && l["from"] == "WaitingForUp" && l["to"] == "Down" {
			t.Errorf("reaper took the app for down while it was starting: %v", l)
		}
	}
}

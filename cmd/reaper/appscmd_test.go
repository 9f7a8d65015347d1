package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/reaper"
)

func TestAppsCmd_ListsTheDemoApps(t *testing.T) {
	n := startTestNode(t)
	r := n.cli(t, "apps")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "APP ") ||
		!strings.Contains(r.stdout, "\nhello ") || !strings.Contains(r.stdout, "\napi ") {
		t.Fatalf("reaper apps: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The table is aligned: each column starts at the same place on every line.
	if col := strings.Index(lines[0], "STATUS"); lines[1][col-1] != ' ' || lines[1][col] == ' ' || lines[2][col] == ' ' {
		t.Errorf("the STATUS column is not aligned:\n%s", r.stdout)
	}
	// The same through the node's configuration file, as JSON.
	r = runCLI(t, context.Background(), "apps", "--json", "--config", n.config)
	var apps []reaper.AppView
	if err := json.Unmarshal([]byte(r.stdout), &apps); r.code != 0 || err != nil || len(apps) != 2 || !apps[0].Managed {
		t.Errorf("reaper apps --json --config: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "[\n  {\n    \"app_id\": ") {
		t.Errorf("reaper apps --json does not print the API's JSON indented:\n%s", r.stdout)
	}
}

func TestHoldCmd_AppAndHistoryShowTheHoldUntilReleased(t *testing.T) {
	n := startTestNode(t)
	r := n.cli(t, "hold", "hello", "6h", "--reason", "nightly backup")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "hello: held awake until ") || !strings.Contains(r.stdout, "(in 6h) by alice: nightly backup") {
		t.Fatalf("reaper hold: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = n.cli(t, "app", "hello"); r.code != 0 || !strings.Contains(r.stdout, "hold ") ||
		!strings.Contains(r.stdout, "(alice: nightly backup)") {
		t.Errorf("reaper app after the hold: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = n.cli(t, "history", "hello")
	var holdLine string
	for line := range strings.Lines(r.stdout) {
		if strings.Contains(line, " hold ") {
			holdLine = line
		}
	}
	if r.code != 0 || !strings.Contains(holdLine, "nightly backup (until ") || !strings.Contains(holdLine, " alice ") {
		t.Errorf("reaper history has no line for the hold by alice: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = n.cli(t, "release", "hello", "--by", "bob"); r.code != 0 || r.stdout != "hello: hold released\n" {
		t.Errorf("reaper release: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if a := n.app(t, "hello"); a.Hold != nil {
		t.Errorf("the hold is still there after the release: %+v", a.Hold)
	}
	if r = n.cli(t, "history", "hello", "--json"); !strings.Contains(r.stdout, `"released_by": "bob"`) {
		t.Errorf("the history does not say bob released the hold:\n%s", r.stdout)
	}
	// Releasing again is not an error: a backup wrapper may release a hold that expired.
	if r = n.cli(t, "release", "hello"); r.code != 0 || r.stdout != "hello: no active hold\n" {
		t.Errorf("reaper release without a hold: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The backup wrapper of the docs: reaper hold db 6h --reason backup --wait && backup; reaper release db
func TestHoldCmd_WaitThenReleaseWrapsAJob(t *testing.T) {
	n := startTestNode(t)
	n.waitStatus(t, "api", reaper.StatusDown)
	r := n.cli(t, "hold", "api", "6h", "--reason", "backup", "--wait", "--timeout", "30s")
	if r.code != 0 || !strings.Contains(r.stdout, "; waking it\n") ||
		!strings.Contains(r.stdout, "api: Up after ") {
		t.Fatalf("reaper hold --wait: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if a := n.app(t, "api"); a.Status != reaper.StatusUp || a.Hold == nil || a.Hold.Reason != "backup" {
		t.Fatalf("after hold --wait, api is %s with hold %+v", a.Status, a.Hold)
	}
	if r = n.cli(t, "release", "api"); r.code != 0 || r.stdout != "api: hold released\n" {
		t.Errorf("reaper release: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestSleepCmd_RefusedExits5WithTheReason(t *testing.T) {
	n := startTestNode(t)
	n.waitStatus(t, "api", reaper.StatusDown)
	r := n.cli(t, "sleep", "api")
	if r.code != exitConflict || r.stdout != "" || r.stderr != "reaper sleep: the app is already Down (409 Conflict)\n" {
		t.Errorf("reaper sleep on a sleeping app: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = n.cli(t, "sleep", "nope"); r.code != exitNotFound || !strings.Contains(r.stderr, `no route manages an app "nope" (404 Not Found)`) {
		t.Errorf("reaper sleep on an unknown app: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = n.cli(t, "hold", "api", "1s"); r.code != exitRefused || !strings.Contains(r.stderr, "must be from 1m0s") {
		t.Errorf("reaper hold for a second: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestWakeCmd_WaitReachesUp(t *testing.T) {
	n := startTestNode(t)
	n.waitStatus(t, "hello", reaper.StatusDown)
	r := n.cli(t, "wake", "hello", "--wait", "--timeout", "30s")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "hello: wake asked (Down); waiting until it is Up\n") ||
		!strings.Contains(r.stdout, "hello: Up after ") {
		t.Fatalf("reaper wake --wait: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if a := n.app(t, "hello"); a.Status != reaper.StatusUp {
		t.Errorf("hello is %s after wake --wait", a.Status)
	}
	r = n.cli(t, "history", "hello", "--json")
	if !strings.Contains(r.stdout, `"kind": "wake_ask"`) || !strings.Contains(r.stdout, `"by": "alice"`) {
		t.Errorf("the history does not keep alice's wake ask:\n%s", r.stdout)
	}
}

// syncBuffer is a buffer that a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEventsCmd_PrintsAnEventThatHappensAfterItStarts(t *testing.T) {
	n := startTestNode(t)
	for _, id := range []string{"api", "hello"} {
		if r := n.cli(t, "wake", id); r.code != 0 {
			t.Fatalf("reaper wake %s: %d %s", id, r.code, r.stderr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"events", "--app", "hello", "--admin", n.admin, "--token", testToken}, noEnv, &stdout, &stderr)
	}()
	// The wake asked before, which the node kept: the stream is open.
	if !testwait.Until(20*time.Second, func() bool { return strings.Contains(stdout.String(), " wake_ask ") }) {
		t.Fatalf("no event of hello's wake ask:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if r := n.cli(t, "hold", "hello", "2h", "--reason", "watch me"); r.code != 0 {
		t.Fatalf("reaper hold: %d %s", r.code, r.stderr)
	}
	testwait.For(t, 10*time.Second, "the hold's event", func() bool {
		return strings.Contains(stdout.String(), " hello        hold      ")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("reaper events ended with %v after Ctrl-C", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reaper events did not end after Ctrl-C")
	}
	out := stdout.String()
	if !strings.Contains(out, "watch me (until ") || !strings.Contains(out, " by alice") || strings.Contains(out, " api ") {
		t.Errorf("reaper events --app hello printed:\n%s\nstderr:\n%s", out, stderr.String())
	}
	if strings.Contains(out+stderr.String(), testToken) {
		t.Error("reaper events printed the token")
	}
}

func TestAdminCmds_WrongTokenExits1WithoutTheToken(t *testing.T) {
	n := startTestNode(t)
	const wrong = "wr0ng-t0ken-xyz"
	for _, cmd := range [][]string{{"apps"}, {"hold", "hello", "1h"}, {"events"}} {
		r := runCLI(t, context.Background(), append(cmd, "--admin", n.admin, "--token", wrong)...)
		if r.code != exitRefused || !strings.Contains(r.stderr, "a valid admin token is required") || strings.Contains(r.stdout+r.stderr, wrong) {
			t.Errorf("reaper %s with a wrong token: %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
}

func TestAdminCmds_UnreachableAdminExits3(t *testing.T) {
	admin := "http://" + freeport.Addr(t)
	for _, cmd := range [][]string{{"apps"}, {"wake", "hello", "--wait"}, {"events"}} {
		r := runCLI(t, context.Background(), append(cmd, "--admin", admin)...)
		if r.code != exitUnreachable || !strings.HasPrefix(r.stderr, "reaper "+cmd[0]+": the admin API at "+admin+" cannot be reached: ") {
			t.Errorf("reaper %s against nothing: %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
}

func TestSavingsCmd_CountsAnAppPutToSleep(t *testing.T) {
	n := startTestNode(t)
	n.waitStatus(t, "hello", reaper.StatusDown)
	if r := n.cli(t, "wake", "hello", "--wait", "--timeout", "30s"); r.code != 0 {
		t.Fatalf("reaper wake --wait: %d %s", r.code, r.stderr)
	}
	if r := n.cli(t, "sleep", "hello"); r.code != 0 || r.stdout != "hello: going to sleep\n" {
		t.Fatalf("reaper sleep: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	n.waitStatus(t, "hello", reaper.StatusDown)
	r := n.cli(t, "savings")
	var row string
	for line := range strings.Lines(r.stdout) {
		if strings.HasPrefix(line, "hello ") {
			row = line
		}
	}
	if r.code != 0 || !strings.Contains(row, " yes ") || !strings.Contains(row, " 3.6000 EUR/h ") || !strings.Contains(r.stdout, "\nTOTAL ") {
		t.Errorf("reaper savings after hello was put to sleep: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = n.cli(t, "savings", "hello", "--json")
	var v reaper.SavingsView
	if err := json.Unmarshal([]byte(r.stdout), &v); r.code != 0 || err != nil || v.AppID != "hello" || !v.Asleep || v.PricePerHour != 3.6 {
		t.Errorf("reaper savings hello --json: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
}

// reaper app says which busy_url is in effect and where it comes from, and
// says nothing of one when the app has none.
func TestPrintApp_BusyURL(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tc := range []struct {
		name string
		view reaper.AppView
		want string
	}{
		{"a route's", reaper.AppView{BusyURL: "http://127.0.0.1:3001/busy", BusyURLFrom: "route worker", BusyMax: "1h0m0s"},
			"busy_url      http://127.0.0.1:3001/busy (route worker; a failing one keeps it up 1h0m0s at most)\n"},
		{"a label's", reaper.AppView{BusyURL: "http://w:8080/busy", BusyURLFrom: "label reaper.busy_url of container w-1", BusyMax: "5m0s"},
			"busy_url      http://w:8080/busy (label reaper.busy_url of container w-1; a failing one keeps it up 5m0s at most)\n"},
		{"none", reaper.AppView{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.view.AppID, tc.view.Managed, tc.view.GracePeriod, tc.view.FailTimeout = "worker", true, "15m0s", "2m0s"
			var b strings.Builder
			printApp(&b, tc.view, now)
			var got string
			for line := range strings.Lines(b.String()) {
				if strings.HasPrefix(line, "busy_url") {
					got += line
				}
			}
			if got != tc.want {
				t.Errorf("busy_url line %q, want %q; all:\n%s", got, tc.want, b.String())
			}
		})
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// fakeGateway answers like reaper in front of the demo app: the status header
// gets the app's status, anything else the app's JSON (or a stale app's).
func fakeGateway(t *testing.T, statuses []string, body string) (addr string, polls *atomic.Int64) {
	t.Helper()
	polls = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "app.test" || r.Header.Get("Accept") != "application/json" {
			http.Error(w, "wrong host or accept", http.StatusBadRequest)
			return
		}
		if r.Header.Get("CleverCloud-Reaper") == "status" {
			i := int(polls.Add(1)) - 1
			fmt.Fprintf(w, `{"status":%q,"ready_delay_ms":0}`, statuses[min(i, len(statuses)-1)])
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), polls
}

func TestGetApp_ReadsTheDemoAppsAnswer(t *testing.T) {
	addr, _ := fakeGateway(t, []string{"Up"}, `{"name":"a","pid":42,"listening_at":"2026-01-02T03:04:05.123456789Z"}`)
	c := clusterenv.NewClient(5 * time.Second)
	info, a, err := getApp(context.Background(), c, addr, "app.test")
	if err != nil || info.PID != 42 || info.ListeningAt == "" || a.Status != 200 || a.ReceivedAt.IsZero() {
		t.Fatalf("getApp = %+v, %d, %v", info, a.Status, err)
	}
}

func TestGetApp_StaleDemoAppIsNamed(t *testing.T) {
	addr, _ := fakeGateway(t, []string{"Up"}, `{"name":"a","pid":42,"started_at":"x"}`)
	if _, _, err := getApp(context.Background(), clusterenv.NewClient(5*time.Second), addr, "app.test"); !errors.Is(err, errStaleDemoApp) {
		t.Fatalf("err = %v, want errStaleDemoApp", err)
	}
	addr, _ = fakeGateway(t, []string{"Up"}, `<html>not the app</html>`)
	if _, _, err := getApp(context.Background(), clusterenv.NewClient(5*time.Second), addr, "app.test"); err == nil || !strings.Contains(err.Error(), "not the demo app") {
		t.Fatalf("err = %v", err)
	}
}
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestKillApps_OnlyTheDemoAppsOfThePidFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "process"), 0o750); err != nil {
		t.Fatal(err)
	}
	start := func(name string) *exec.Cmd {
		// A copy of sleep under another name plays the demo app.
		bin := filepath.Join(dir, name)
		src, err := exec.LookPath("sleep")
		if err != nil {
			t.Skip("no sleep binary")
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		rec, _ := json.Marshal(map[string]int{"pid": cmd.Process.Pid, "pgid": cmd.Process.Pid})
		if err := os.WriteFile(filepath.Join(dir, "process", name+".pid"), rec, 0o600); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	demo := start("demoapp")
	other := start("other")
	killApps(dir, filepath.Join(dir, "demoapp"))
	if err := demo.Wait(); err == nil {
		t.Error("the demo app exited cleanly: it was not killed")
	}
	if !alive(other.Process.Pid) {
		t.Error("a process that is not the demo app was killed")
	}
}

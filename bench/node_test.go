package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	c := newClient(5 * time.Second)
	info, a, err := getApp(context.Background(), c, addr, "app.test")
	if err != nil || info.PID != 42 || info.ListeningAt == "" || a.status != 200 || a.receivedAt.IsZero() {
		t.Fatalf("getApp = %+v, %d, %v", info, a.status, err)
	}
}

func TestGetApp_StaleDemoAppIsNamed(t *testing.T) {
	addr, _ := fakeGateway(t, []string{"Up"}, `{"name":"a","pid":42,"started_at":"x"}`)
	if _, _, err := getApp(context.Background(), newClient(5*time.Second), addr, "app.test"); !errors.Is(err, errStaleDemoApp) {
		t.Fatalf("err = %v, want errStaleDemoApp", err)
	}
	addr, _ = fakeGateway(t, []string{"Up"}, `<html>not the app</html>`)
	if _, _, err := getApp(context.Background(), newClient(5*time.Second), addr, "app.test"); err == nil || !strings.Contains(err.Error(), "not the demo app") {
		t.Fatalf("err = %v", err)
	}
}

func TestWaitStatus_PollsUntilTheStatus(t *testing.T) {
	addr, polls := fakeGateway(t, []string{"WaitingForInit", "Up", "WaitingForShutdown", "Down"}, "")
	c := newClient(5 * time.Second)
	if err := waitStatus(context.Background(), c, addr, "app.test", "Down", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if polls.Load() != 4 {
		t.Errorf("%d polls, want 4", polls.Load())
	}
	addr, _ = fakeGateway(t, []string{"Up"}, "")
	err := waitStatus(context.Background(), c, addr, "app.test", "Down", 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still Up") {
		t.Errorf("timeout: %v", err)
	}
}

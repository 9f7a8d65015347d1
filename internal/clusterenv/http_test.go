package clusterenv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// statusGateway answers the CleverCloud-Reaper: status header like reaper, with
// the statuses given, one per poll, the last one repeated.
func statusGateway(t *testing.T, statuses ...string) (addr string, polls *atomic.Int64) {
	t.Helper()
	polls = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "app.test" || r.Header.Get("CleverCloud-Reaper") != "status" {
			http.Error(w, "wrong host or header", http.StatusBadRequest)
			return
		}
		i := int(polls.Add(1)) - 1
		fmt.Fprintf(w, `{"status":%q,"ready_delay_ms":0}`, statuses[min(i, len(statuses)-1)])
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), polls
}

func TestWaitStatus_PollsUntilTheStatus(t *testing.T) {
	addr, polls := statusGateway(t, "WaitingForInit", "Up", "WaitingForShutdown", "Down")
	c := NewClient(5 * time.Second)
	if err := WaitStatus(context.Background(), c, addr, "app.test", "Down", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if polls.Load() != 4 {
		t.Errorf("%d polls, want 4", polls.Load())
	}
	addr, _ = statusGateway(t, "Up")
	err := WaitStatus(context.Background(), c, addr, "app.test", "Down", 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still Up") {
		t.Errorf("timeout: %v", err)
	}
}

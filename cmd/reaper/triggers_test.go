package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/trigger"
)

const producerToken = "producer-t0ken-of-the-orders-app"

// triggerNode is a test node whose api app is a worker woken by a redis list
// (redis-queue) and by producers (orders).
func triggerNode(t *testing.T) (*testNode, *redistest.Server) {
	t.Helper()
	rs := redistest.Start(t, redistest.Options{})
	n := startTestNodeTop(t, "", "", fmt.Sprintf(`triggers:
  - {id: redis-queue, wake: api, every: 300ms, redis_list: {addr: %q, key: jobs}}
  - {id: orders, wake: api, token: %s}
`, rs.Addr(), producerToken))
	n.waitStatus(t, "api", reaper.StatusDown)
	return n, rs
}

// wakeAsks returns the app's wake asks in its history, by whom.
func wakeAsks(t *testing.T, n *testNode, app string) []string {
	t.Helper()
	c := &adminapi.Client{Base: n.admin, Token: testToken, Timeout: 10 * time.Second}
	h, err := c.History(context.Background(), app, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	for _, e := range h.Items {
		if e.Kind == reaper.EventWakeAsk {
			by = append(by, e.By)
		}
	}
	return by
}

// An RPUSH wakes the worker, which no request wakes, through the engine's
// wake: the history names the trigger, and the worker gets its full grace
// period (it is Up, with a reap time a grace period after it came up).
func TestTriggers_RPushWakesTheWorker(t *testing.T) {
	n, rs := triggerNode(t)
	if _, err := rs.Do("RPUSH", "jobs", "job-1"); err != nil {
		t.Fatal(err)
	}
	n.waitStatus(t, "api", reaper.StatusUp)
	if by := wakeAsks(t, n, "api"); len(by) != 1 || by[0] != "trigger redis-queue" {
		t.Errorf("wake asks by %q, want one, by \"trigger redis-queue\"", by)
	}
	a := n.app(t, "api")
	if a.ReapAt == nil || a.LastUpAt == nil || a.ReapAt.Sub(*a.LastUpAt) < 10*time.Minute {
		t.Errorf("reap at %v, up at %v: want a full grace period (10m) after it came up", a.ReapAt, a.LastUpAt)
	}
	// The job stays in the list while the worker is up: no more asks.
	c := &adminapi.Client{Base: n.admin, Token: testToken, Timeout: 10 * time.Second}
	var views trigger.Answer
	testwait.For(t, 20*time.Second, "two more looks at the list", func() bool {
		if err := c.Call(context.Background(), "GET", trigger.AdminPath, nil, &views); err != nil {
			t.Fatal(err)
		}
		v := views.Triggers[0]
		return v.LastCheck != nil && a.LastUpAt != nil && v.LastCheck.After(a.LastUpAt.Add(time.Second))
	})
	if v := views.Triggers[0]; v.ID != "redis-queue" || !v.Running || v.Fires != 1 || v.LastFire == nil {
		t.Errorf("/api/triggers: %+v, want redis-queue running with one fire", v)
	}
	if by := wakeAsks(t, n, "api"); len(by) != 1 {
		t.Errorf("%d wake asks while the worker is up, want 1", len(by))
	}
	body := metricsText(t, n)
	for _, want := range []string{`reaper_trigger_wakes_total{trigger="redis-queue"} 1`, `reaper_trigger_checks_total{result="work",trigger="redis-queue"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// A producer's POST on the gateway listener wakes the worker; a wrong token
// does not.
func TestTriggers_ProducerEndpointOnTheGateway(t *testing.T) {
	n, _ := triggerNode(t)
	call := func(id, token string) int {
		req, _ := http.NewRequest("POST", "http://"+n.gateway+trigger.WakePathPrefix+id, nil)
		req.Host = "anything.test"
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := call("orders", "wrong-wrong-wrong-wrong"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", code)
	}
	if code := call("nope", producerToken); code != http.StatusUnauthorized {
		t.Fatalf("an unknown id: %d", code)
	}
	if a := n.app(t, "api"); a.Status != reaper.StatusDown {
		t.Fatalf("refused calls changed api: %s", a.Status)
	}
	if code := call("orders", producerToken); code != http.StatusAccepted {
		t.Fatalf("the right token: %d", code)
	}
	n.waitStatus(t, "api", reaper.StatusUp)
	if by := wakeAsks(t, n, "api"); len(by) != 1 || by[0] != "trigger orders" {
		t.Errorf("wake asks by %q, want one, by \"trigger orders\"", by)
	}
	// Each call has its access line, in the node's log beside the gateway's.
	path := "path=" + trigger.WakePathPrefix
	testwait.For(t, 10*time.Second, "the calls' access lines", func() bool {
		return n.logs.Lines("msg=access", path+"orders", "app=api", "outcome=woken", "status=202") == 1 &&
			n.logs.Lines("msg=access", path+"orders", "app=api", "outcome=\"refused: unauthorized", "status=401") == 1 &&
			n.logs.Lines("msg=access", path+"nope", "app=\"\"", "outcome=\"refused: unauthorized", "status=401") == 1
	})
	if strings.Contains(n.logs.String(), producerToken) {
		t.Error("the producer's token is in the node's log")
	}
}

func metricsText(t *testing.T, n *testNode) string {
	t.Helper()
	req, _ := http.NewRequest("GET", n.admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

package reaper

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// Requests held for a sleeping app, and counted in the store by a flush while
// they wait, are released and answered; "sleep now" asked right after is
// accepted, and the app's in_flight is 0: this node's count is exact the moment
// its requests end, not as of its last flush (which said they were all open).
func TestAdminAPI_SleepNowRightAfterTheLastHeldRequestEnds(t *testing.T) {
	rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0}")
	const n = 20
	answers := make(chan string, n)
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range n {
		go func() {
			req, _ := http.NewRequest("POST", rig.front.URL+"/", strings.NewReader(fmt.Sprint(i)))
			req.Header.Set("Accept", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				answers <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	testwait.For(t, 10*time.Second, "the requests held", func() bool { return rig.app.held.Load() == n })
	rig.engine.Flush(context.Background()) // the store now counts them open on this node
	if c, _ := rig.engine.store.InFlight(context.Background()); c["app"] != n {
		t.Fatalf("the store counts %d open after the flush, want %d", c["app"], n)
	}

	rig.fake.FinishStart("app")
	for range n {
		if a := <-answers; !strings.HasPrefix(a, "200 from the app") {
			t.Fatalf("a released request got %q", a)
		}
	}
	h := (&AdminAPI{Engine: rig.engine, Store: rig.engine.store}).Handler()
	_, app, _ := call(t, h, "GET", "/api/apps/app", "")
	if app["in_flight"] != 0.0 || app["status"] != "Up" {
		t.Errorf("right after its last request ended, the app says in_flight %v, status %v; want 0, Up", app["in_flight"], app["status"])
	}
	if code, body, _ := call(t, h, "POST", "/api/apps/app/_sleep", `{"by": "ops"}`); code != 202 || body["open"] != 0.0 {
		t.Errorf("sleep now right after the last request ended: %d %v; want 202 with nothing open", code, body)
	}
}

// The counts over every node are the others' as last flushed and this node's
// exact one: a request that ended here is gone at once, another node's stays.
func TestEngine_OpenEverywhereTakesThisNodesPartExactly(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	e := NewEngine(EngineOptions{Node: "n1", Store: store})
	if err := store.SetInFlight(ctx, "n2", map[string]int{"web": 3}, time.Minute); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.AppID = "web"
	e.Register("r1", "r1", &cfg, nil)
	end := e.app("web").begin()
	e.Flush(ctx)
	if got, _ := e.OpenEverywhere(ctx); got["web"] != 4 {
		t.Errorf("with one request open here and 3 on n2: %v, want web 4", got)
	}
	end()
	if got, _ := e.OpenEverywhere(ctx); got["web"] != 3 {
		t.Errorf("once the request here ended, before any flush: %v, want web 3 (n2's)", got)
	}
	if sums, _ := store.InFlight(ctx); sums["web"] != 4 {
		t.Fatalf("the store's sum before the next flush: %v, want 4 (the test's premise)", sums)
	}
	e.Flush(ctx)
	if got, _ := e.OpenEverywhere(ctx); got["web"] != 3 {
		t.Errorf("after the flush: %v, want web 3", got)
	}
}

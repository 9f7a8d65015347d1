package fakeclever

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

func TestFaults_AnswersAndCounts(t *testing.T) {
	f := startFake(t, Options{})
	a := f.AddApp(App{Owner: testOrga})
	other := f.AddApp(App{Owner: testOrga})
	appURL := func(id string) string { return f.BridgeURL() + "/v2/organisations/" + testOrga + "/applications/" + id }
	type v2 struct {
		ID   int
		Type string
	}
	type v4 struct {
		APIRequestID string
		Code, Error  string
	}

	// Per app, twice: the other app and the summary are not affected.
	f.Inject(a.ID, Fault{Kind: Fault5xx, Count: 2, Status: 502})
	if got := call(t, "GET", appURL(other.ID), bearer(f)).status; got != 200 {
		t.Errorf("other app: %d", got)
	}
	for i := range 2 {
		ans := call(t, "GET", appURL(a.ID), bearer(f))
		var e v2
		ans.json(t, &e)
		if ans.status != 502 || e.Type != "error" {
			t.Errorf("call %d: %d %s", i, ans.status, ans.body)
		}
	}
	if got := call(t, "GET", appURL(a.ID), bearer(f)).status; got != 200 {
		t.Errorf("after the count: %d", got)
	}

	// Global rate limit, v2 style, with Retry-After rounded up to whole seconds.
	f.Inject("", Fault{Kind: FaultRateLimit403, Count: 1, RetryAfter: 1500 * time.Millisecond})
	ans := call(t, "GET", f.BridgeURL()+"/v2/summary", bearer(f))
	var e2 v2
	ans.json(t, &e2)
	if ans.status != 403 || e2.ID != 403 || ans.header.Get("Retry-After") != "2" {
		t.Errorf("rate limit 403: %d %v %s", ans.status, ans.header, ans.body)
	}
	// On a v4 path the same fault is a 429 with a v4 body; without RetryAfter no header.
	f.Inject("", Fault{Kind: FaultRateLimit403, Count: 1})
	ans = call(t, "GET", f.BridgeURL()+"/v4/billing/price-system?zone_id=par", bearer(f))
	var e4 v4
	ans.json(t, &e4)
	if ans.status != 429 || e4.Code == "" || e4.APIRequestID == "" || ans.header.Get("Retry-After") != "" {
		t.Errorf("rate limit on v4: %d %v %s", ans.status, ans.header, ans.body)
	}
	f.Inject("", Fault{Kind: FaultTooMany429, Count: 1, RetryAfter: time.Second})
	if ans := call(t, "GET", appURL(a.ID), bearer(f)); ans.status != 429 || ans.header.Get("Retry-After") != "1" {
		t.Errorf("429: %d %v", ans.status, ans.header)
	}

	// 4014 and locked only hit starts (and stops, for locked); reads go through.
	f.Inject(a.ID, Fault{Kind: FaultNeverDeployed4014})
	f.Inject(a.ID, Fault{Kind: FaultLocked, Count: 1})
	if got := call(t, "GET", appURL(a.ID), bearer(f)).status; got != 200 {
		t.Errorf("read during start faults: %d", got)
	}
	ans = call(t, "POST", appURL(a.ID)+"/instances", bearer(f))
	ans.json(t, &e2)
	if ans.status != 400 || e2.ID != 4014 {
		t.Errorf("4014: %d %s", ans.status, ans.body)
	}
	ans = call(t, "DELETE", appURL(a.ID)+"/instances", bearer(f))
	ans.json(t, &e2)
	if ans.status != http.StatusConflict || e2.ID != 409 {
		t.Errorf("locked: %d %s", ans.status, ans.body)
	}
	// 4014 has Count 0: until cleared.
	if got := call(t, "POST", appURL(a.ID)+"/instances", bearer(f)).status; got != 400 {
		t.Errorf("4014 again: %d", got)
	}
	f.ClearFaults()
	if got := call(t, "POST", appURL(a.ID)+"/instances", bearer(f)).status; got != 200 {
		t.Errorf("after ClearFaults: %d", got)
	}
	if f.Starts(a.ID) != 1 {
		t.Errorf("starts = %d, want 1 (faulted starts do not count)", f.Starts(a.ID))
	}
	// Faults are recorded with the calls.
	var faulted int
	for _, c := range f.Calls() {
		if c.Fault != "" {
			faulted++
		}
	}
	if faulted != 8 {
		t.Errorf("%d faulted calls recorded, want 8", faulted)
	}
}

func TestFaults_SlowAnswersLateOrNotAtAll(t *testing.T) {
	f := startFake(t, Options{})
	a := f.AddApp(App{Owner: testOrga, State: StateShouldBeDown})
	u := f.BridgeURL() + "/v2/organisations/" + testOrga + "/applications/" + a.ID + "/instances"

	f.Inject(a.ID, Fault{Kind: FaultSlow, Count: 1, Delay: 100 * time.Millisecond})
	start := time.Now()
	if got := call(t, "GET", u, bearer(f)).status; got != 200 {
		t.Errorf("slow call: %d", got)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("answered after %v, want at least 100ms", d)
	}

	// A client that gives up: the start has no effect and the call shows as 499.
	f.Inject(a.ID, Fault{Kind: FaultSlow, Count: 1, Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", u, nil)
	req.Header.Set("Authorization", bearer(f))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the slow call answered")
	}
	testwait.For(t, 5*time.Second, "the abandoned call to be recorded", func() bool {
		calls := f.Calls()
		return calls[len(calls)-1].Status == 499
	})
	if f.Starts(a.ID) != 0 {
		t.Error("an abandoned start took effect")
	}
}

func TestFaults_InjectRefusesNonsense(t *testing.T) {
	f := New(Options{})
	for _, bad := range []Fault{{Kind: "nope"}, {Kind: Fault5xx, Status: 404}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Inject(%+v) did not panic", bad)
				}
			}()
			f.Inject("", bad)
		}()
	}
}

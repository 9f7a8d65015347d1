package reaper

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

// doFrom runs one request from client through the plugin, as do does.
func doFrom(p *Plugin, client string, req *http.Request) result {
	ex := &plugin.Exchange{Request: req.WithContext(context.Background()), ID: "req-1", Start: time.Now(),
		ClientIP: netip.MustParseAddr(client)}
	a, err := p.ValidateAccess(ex)
	ex.Finish()
	return result{answer: a, err: err, ex: ex}
}

// limitedEnv is n sleeping apps a00, a01…, each on a route that answers API
// calls 503 while it wakes (so that nothing is held), on a node with the wake
// limits perClient and perNode.
func limitedEnv(t *testing.T, n, perClient, perNode int) (*env, []*Plugin, []string) {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("a%02d", i)
	}
	e := newEnv(t, paastest.New(ids...), "")
	e.engine.wakes = newWakeLimits(perClient, perNode)
	ps := make([]*Plugin, n)
	for i, id := range ids {
		ps[i] = e.route(config(id, func(c *Config) { c.APIBehavior = BehaviorUnavailable }))
	}
	return e, ps, ids
}

// One client wakes 30 apps in a burst; the 31st wake it asks for is refused
// with 429 and Retry-After, starts nothing and is no traffic, while another
// client wakes that app at once. Requests for apps already waking or up never
// count.
func TestWakeLimit_PerClientRefusesPastItsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ps, ids := limitedEnv(t, 32, 30, 0)
		e.start()
		defer e.stop()
		settle()

		const greedy = "198.51.100.7"
		for i, p := range ps[:30] {
			if r := doFrom(p, greedy, apiRequest("GET", "/")); r.status() != http.StatusServiceUnavailable {
				t.Fatalf("wake %d of 30: %d, want 503 (waking)", i+1, r.status())
			}
		}
		r := doFrom(ps[30], greedy, apiRequest("GET", "/"))
		if r.status() != http.StatusTooManyRequests || r.answer.Header.Get("Retry-After") != "2" ||
			!strings.Contains(string(r.answer.Body), "too many wake-ups were asked from your address") ||
			r.ex.Outcome != OutcomeTooManyWakes || r.answer.Header.Get(HeaderStatus) != "Down" {
			t.Fatalf("the 31st wake: %d Retry-After %q outcome %q %s, want 429, Retry-After 2", r.status(),
				r.answer.Header.Get("Retry-After"), r.ex.Outcome, r.answer.Body)
		}
		settle()
		for i, id := range ids[:30] {
			if n := e.fake.Count("start", id); n != 1 {
				t.Errorf("%s (wake %d): %d starts, want 1", id, i+1, n)
			}
		}
		if n := e.fake.Count("start", ids[30]); n != 0 || !ps[30].route.a.lastAccessTime().IsZero() {
			t.Fatalf("the refused wake started %s %d times (traffic at %v)", ids[30], n, ps[30].route.a.lastAccessTime())
		}
		if n := e.logs.Lines("wakes refused by the wake limits", "client="+greedy, "app="+ids[30], "refused=1"); n != 1 {
			t.Errorf("the refusal is not logged:\n%s", e.logs.String())
		}

		// The apps it woke are up or waking: its requests for them never
		// count, however many.
		for range 100 {
			for _, p := range ps[:3] {
				if r := doFrom(p, greedy, apiRequest("GET", "/")); r.status() == http.StatusTooManyRequests {
					t.Fatalf("a request for %s, awake or waking, was refused by the wake limit", p.AppID)
				}
			}
		}
		// Another client is not limited by this one.
		if r := doFrom(ps[30], "203.0.113.1", apiRequest("GET", "/")); r.status() != http.StatusServiceUnavailable {
			t.Errorf("another client's wake: %d, want 503 (waking)", r.status())
		}
		settle()
		if n := e.fake.Count("start", ids[30]); n != 1 {
			t.Errorf("%s: %d starts after another client asked, want 1", ids[30], n)
		}
		// Past Retry-After, the first client wakes one more.
		time.Sleep(2 * time.Second)
		if r := doFrom(ps[31], greedy, apiRequest("GET", "/")); r.status() != http.StatusServiceUnavailable {
			t.Errorf("a wake 2 s later: %d, want 503 (waking)", r.status())
		}
		settle()
		if n := e.fake.Count("start", ids[31]); n != 1 {
			t.Errorf("%s: %d starts, want 1", ids[31], n)
		}
	})
}

// A browser refused by the wake limit gets the waiting page saying so, in its
// language, with 429 and Retry-After; the page reloads itself after the wait.
func TestWakeLimit_BrowserGetsTheWaitingPageSayingSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ps, ids := limitedEnv(t, 2, 1, 0)
		e.start()
		defer e.stop()
		settle()
		const client = "2001:db8:7:7::1"
		if r := doFrom(ps[0], client, browserRequest()); r.status() != http.StatusServiceUnavailable {
			t.Fatalf("the first wake: %d, want the 503 waiting page", r.status())
		}
		// Another address of the same /64 is the same client.
		r := doFrom(ps[1], "2001:db8:7:7::99", browserRequest())
		body := string(r.answer.Body)
		if r.status() != http.StatusTooManyRequests || r.answer.Header.Get("Retry-After") != "60" ||
			!strings.HasPrefix(r.answer.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("the refused browser: %d %v", r.status(), r.answer.Header)
		}
		for _, want := range []string{`data-state="limited"`, "Trop de réveils ont été demandés depuis votre adresse. Cette page réessaie dans <bdi>60</bdi> s.",
			`"retry":60000`, `<meta http-equiv="refresh" content="60">`} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %s:\n%.2000s", want, body)
			}
		}
		settle()
		if n := e.fake.Count("start", ids[1]); n != 0 {
			t.Errorf("%s was started for the refused browser", ids[1])
		}
	})
}

// The waiting page's live stream asks for a wake too: past the limit it is
// refused like any request that would start one, and wakes nothing.
func TestWakeLimit_LiveStreamCannotWakePastTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ps, ids := limitedEnv(t, 2, 1, 0)
		e.start()
		defer e.stop()
		settle()
		const client = "198.51.100.8"
		if r := doFrom(ps[0], client, apiRequest("GET", "/")); r.status() != http.StatusServiceUnavailable {
			t.Fatalf("the first wake: %d", r.status())
		}
		r := doFrom(ps[1], client, httptest.NewRequest(http.MethodGet, WellKnownEventsPath, nil))
		if r.status() != http.StatusTooManyRequests || r.answer.Header.Get("Retry-After") != "60" || r.ex.Outcome != OutcomeTooManyWakes {
			t.Fatalf("the stream of another app past the limit: %d %v", r.status(), r.answer.Header)
		}
		settle()
		if n := e.fake.Count("start", ids[1]); n != 0 || e.engine.live.Load() != 0 {
			t.Errorf("%s started %d times by a refused stream (%d streams counted open)", ids[1], n, e.engine.live.Load())
		}
	})
}

// The node's limit counts every client's wakes together.
func TestWakeLimit_PerNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ps, ids := limitedEnv(t, 3, 0, 2)
		e.start()
		defer e.stop()
		settle()
		for i, client := range []string{"192.0.2.1", "192.0.2.2"} {
			if r := doFrom(ps[i], client, apiRequest("GET", "/")); r.status() != http.StatusServiceUnavailable {
				t.Fatalf("wake %d: %d, want 503", i+1, r.status())
			}
		}
		r := doFrom(ps[2], "192.0.2.3", apiRequest("GET", "/"))
		if r.status() != http.StatusTooManyRequests || r.answer.Header.Get("Retry-After") != "30" {
			t.Fatalf("the node's third wake in a minute: %d Retry-After %q, want 429, 30", r.status(), r.answer.Header.Get("Retry-After"))
		}
		settle()
		if n := e.fake.Count("start", ids[2]); n != 0 {
			t.Errorf("%s started past the node's limit", ids[2])
		}
	})
}

// Without limits (both 0), nothing is limited.
func TestWakeLimit_OffLimitsNothing(t *testing.T) {
	if l := newWakeLimits(0, 0); l != nil {
		t.Fatalf("newWakeLimits(0, 0) = %+v, want nil", l)
	}
	synctest.Test(t, func(t *testing.T) {
		e, ps, _ := limitedEnv(t, 40, 0, 0)
		e.start()
		defer e.stop()
		settle()
		for i, p := range ps {
			if r := doFrom(p, "198.51.100.7", apiRequest("GET", "/")); r.status() != http.StatusServiceUnavailable {
				t.Fatalf("wake %d without limits: %d", i+1, r.status())
			}
		}
	})
}

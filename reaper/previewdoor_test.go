package reaper

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
	"github.com/reapergw/reaper/ratelimit"
)

// previewFrom asks for the preview from client with the given Authorization.
func previewFrom(p *Plugin, client, authorization string) *plugin.Answer {
	ex := &plugin.Exchange{Request: previewRequest("", authorization).WithContext(context.Background()),
		ID: "req-1", Start: time.Now(), ClientIP: netip.MustParseAddr(client)}
	defer ex.Finish()
	a, _ := p.ValidateAccess(ex)
	return a
}

// Wrong tokens at the preview count against the client's budget of failures,
// the one the admin listener's doors share: past it, 429 and Retry-After,
// whatever it sends.
func TestPreview_WrongTokensAreRateLimitedWithTheAdminDoors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := ratelimit.NewDoors(nil)
		fake := paastest.New("app")
		e := newEnv(t, fake, "")
		e.engine.opts.AdminToken = "s3cret"
		e.engine.opts.Failures = shared
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()

		const bad = "203.0.113.4"
		// Two failures elsewhere (the admin API's token, the sign-in form)…
		shared.Failed(bad, "admin API token", time.Now())
		shared.Failed(bad, "dashboard sign-in", time.Now())
		// …and three here use the budget up.
		for i := range ratelimit.DoorBurst - 2 {
			if a := previewFrom(p, bad, "Bearer guess"); a.Status != http.StatusUnauthorized {
				t.Fatalf("wrong token %d: %d, want 401", i+1, a.Status)
			}
		}
		a := previewFrom(p, bad, "Bearer s3cret")
		if a.Status != http.StatusTooManyRequests || a.Header.Get("Retry-After") != "12" || strings.Contains(string(a.Body), "s3cret") {
			t.Fatalf("the right token past the budget: %d Retry-After %q %s, want 429, Retry-After 12",
				a.Status, a.Header.Get("Retry-After"), a.Body)
		}
		if _, limited := shared.Limited(bad, "admin API token", time.Now()); !limited {
			t.Error("failures at the preview do not limit the client at the admin API")
		}
		if a := previewFrom(p, "198.51.100.3", "Bearer s3cret"); a.Status != http.StatusOK {
			t.Errorf("another client with the token: %d, want 200", a.Status)
		}
		time.Sleep(ratelimit.DoorRefill)
		if a := previewFrom(p, bad, "Bearer s3cret"); a.Status != http.StatusOK {
			t.Errorf("once a failure refilled: %d, want 200", a.Status)
		}
	})
}

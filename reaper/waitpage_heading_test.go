package reaper

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// The reference's scenario: the default waiting page's heading names the route
// the visitor asked for ("<route name> is waking up"), on a hold route and an
// unavailable one alike, even when the app has another name on its platform;
// that name stays for custom pages ({{app_name}}).
func TestWaitingPage_HeadingNamesTheRoute(t *testing.T) {
	for _, behavior := range []string{BehaviorHold, BehaviorUnavailable} {
		t.Run(behavior, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := paastest.New("app", "custom")
				fake.Manual = true
				fake.Set("app", paastest.App{State: paas.StateShouldBeDown, Name: "Shop"})
				fake.Set("custom", paastest.App{State: paas.StateShouldBeDown, Name: "Shop"})
				e := newEnv(t, fake, "")
				p := e.route(config("app", func(c *Config) { c.APIBehavior = behavior }))
				custom := e.route(config("custom", func(c *Config) {
					c.APIBehavior = behavior
					c.WaitingPage = `<title>{{app_name}} / {{route_name}}</title>`
				}))
				e.start()
				defer e.stop()
				settle()
				req := browserRequest()
				req.Header.Set("Accept-Language", "en")
				body := string(do(context.Background(), p, req, false).answer.Body)
				for _, want := range []string{"<title>Route app is waking up</title>", "<bdi>Route app</bdi> is waking up"} {
					if !strings.Contains(body, want) {
						t.Errorf("the default page lacks %q:\n%s", want, body)
					}
				}
				if strings.Contains(body, "Shop") {
					t.Errorf("the default page shows the app's platform name:\n%s", body)
				}
				req = browserRequest()
				if body := string(do(context.Background(), custom, req, false).answer.Body); !strings.Contains(body, "<title>Shop / Route custom</title>") {
					t.Errorf("a custom page's {{app_name}} is not the app's platform name:\n%s", body)
				}
			})
		})
	}
}

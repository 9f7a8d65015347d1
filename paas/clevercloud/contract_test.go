package clevercloud

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
	"github.com/reapergw/reaper/paas/paastest"
)

// TestClient_Contract runs paas.Client's contract against the fake Clever Cloud,
// paced as the real one (scaled down): an app says SHOULD_BE_DOWN for a moment
// after a start, WANTS_TO_BE_UP while it deploys, and SHOULD_BE_UP for a moment
// after a stop; a start or a stop sent meanwhile is refused (locked).
func TestClient_Contract(t *testing.T) {
	paastest.Run(t, func(t *testing.T) paastest.Harness {
		e := newEnv(t, fakeclever.Options{DeployDelay: 30 * time.Millisecond, BootTime: 60 * time.Millisecond,
			StopLinger: 60 * time.Millisecond}, nil)
		add := func(a fakeclever.App) paas.App {
			a.Owner = orga
			a = e.f.AddApp(a)
			return paas.App{ID: a.ID, Owner: a.Owner}
		}
		down := fakeclever.StateShouldBeDown
		web, api := add(fakeclever.App{Name: "web", State: down}), add(fakeclever.App{Name: "api", State: down})
		broken := add(fakeclever.App{Name: "broken", State: down})
		if err := e.f.Console(broken.ID).FailNextDeployment(); err != nil {
			t.Fatal(err)
		}
		return paastest.Harness{
			Client:  e.c,
			Apps:    [2]paas.App{web, api},
			Unknown: paas.App{ID: "app_00000000-0000-4000-8000-00000000dead", Owner: orga},
			Starts:  func(_ *testing.T, app paas.App) int { return e.f.Starts(app.ID) },
			Running: func(t *testing.T, app paas.App) int {
				st, ok := e.f.App(app.ID)
				if !ok {
					t.Fatalf("%s: not an app of the fake", app)
				}
				return len(st.Instances)
			},
			StopOutside: func(t *testing.T, app paas.App) {
				if err := e.f.Console(app.ID).Stop(); err != nil {
					t.Fatal(err)
				}
			},
			Outage: func(*testing.T) func() {
				e.f.Inject("", fakeclever.Fault{Kind: fakeclever.Fault5xx})
				return e.f.ClearFaults
			},
			Failing:         broken,
			NeverDeployed:   add(fakeclever.App{Name: "never", NeverDeployed: true}),
			NotShutdownable: add(fakeclever.App{Name: "keep", NotShutdownable: true}),
			Lags:            true,
			Locks:           true,
			RestartsWhenUp:  true,
		}
	})
}

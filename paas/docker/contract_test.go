package docker

import (
	"testing"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// TestDriver_Contract runs paas.Client's contract against a real engine, through
// the allow-list proxy: two declared demo containers, and one that exits before
// it is ready.
func TestDriver_Contract(t *testing.T) {
	t.Parallel()
	paastest.Run(t, func(t *testing.T) paastest.Harness {
		e := newEnv(t)
		web, webAddr := e.demo("web", nil)
		api, apiAddr := e.demo("api", nil)
		broken, brokenAddr := e.demo("broken", nil, "--boot-delay", "10s", "--fail-after", "100ms")
		d := e.driver(Config{Apps: []AppConfig{
			demoApp("web", web, webAddr), demoApp("api", api, apiAddr), demoApp("broken", broken, brokenAddr),
		}})
		containers := map[string]string{"web": web, "api": api, "broken": broken}
		addrs := map[string]string{"web": webAddr, "api": apiAddr}
		ids := map[string]string{} // container ids, read once (docker inspect is slow)
		id := func(t *testing.T, app paas.App) string {
			if ids[app.ID] == "" {
				ids[app.ID] = dockertest.ID(t, containers[app.ID])
			}
			return ids[app.ID]
		}
		return paastest.Harness{
			Client: d,
			Apps:   [2]paas.App{{ID: "web"}, {ID: "api"}},
			Starts: func(t *testing.T, app paas.App) int { return e.proxy.Starts(id(t, app)) },
			Running: func(t *testing.T, app paas.App) int {
				if dockertest.State(t, containers[app.ID]) == "running" {
					return 1
				}
				return 0
			},
			Serves:      func(_ *testing.T, app paas.App) bool { return answers(addrs[app.ID]) },
			StopOutside: func(t *testing.T, app paas.App) { dockertest.Docker(t, "stop", containers[app.ID]) },
			Outage: func(*testing.T) func() {
				e.proxy.Down()
				return e.proxy.Up
			},
			Failing: paas.App{ID: "broken"},
		}
	})
}

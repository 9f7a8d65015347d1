package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
)

// A group of two containers discovered from their labels: web (a route, grace
// 3s) and db (no route; a slow boot of 500ms). web's label reaper.depends_on=db
// reaches the engine through the driver, which starts only what it is asked
// to: a request to web wakes both, one start each, db first and web once db is
// ready; idle, both sleep together, web first.
func TestDocker_GroupWakesAndSleepsTogether(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	web := e.add(dockerApp{id: "web", grace: "3s", labels: []string{"reaper.depends_on=db"}}, nil)
	db := e.add(dockerApp{id: "db", labels: []string{}}, nil, "--boot-delay", "500ms")
	cfg := withoutRoute(e.config(), "db")
	// Listed web first: the start order comes from depends_on, not the list.
	cfg += "groups:\n  - {id: shop, apps: [web, db]}\n"
	e.dir = t.TempDir()
	e.p = startReaper(t, e.dir, cfg)
	e.waitStatus("web", "Down", 10*time.Second)
	testwait.For(t, 10*time.Second, "db to be known asleep", func() bool { return e.adminApp("db")["status"] == "Down" })

	resp, err := e.p.request("GET", "web.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("the wake: %d %s", resp.StatusCode, body)
	}
	testwait.For(t, 20*time.Second, "db to be up", func() bool { return e.adminApp("db")["status"] == "Up" })
	webID, dbID := dockertest.ID(t, web.container), dockertest.ID(t, db.container)
	if w, d := e.proxy.Starts(webID), e.proxy.Starts(dbID); w != 1 || d != 1 {
		t.Errorf("starts: web %d, db %d; want one each", w, d)
	}
	dbAt, webAt := dockertest.StartedAt(t, db.container), dockertest.StartedAt(t, web.container)
	if gap := webAt.Sub(dbAt); gap < 500*time.Millisecond {
		t.Errorf("web started %s after db, want after db was ready (its boot takes 500ms)", gap)
	}

	testwait.For(t, 40*time.Second, "both containers to be put to sleep", func() bool {
		return dockertest.State(t, web.container) == "exited" && dockertest.State(t, db.container) == "exited"
	})
	webEnd := dockertest.Docker(t, "inspect", "--format", "{{.State.FinishedAt}}", web.container)
	dbEnd := dockertest.Docker(t, "inspect", "--format", "{{.State.FinishedAt}}", db.container)
	if dbEnd < webEnd { // RFC 3339 in UTC: ordered as text
		t.Errorf("db stopped at %s, before web (%s)", dbEnd, webEnd)
	}
	if w, d := e.proxy.Starts(webID), e.proxy.Starts(dbID); w != 1 || d != 1 {
		t.Errorf("starts once asleep: web %d, db %d; want still one each", w, d)
	}
	e.waitStatus("web", "Down", 10*time.Second)
	testwait.For(t, 10*time.Second, "db to be known asleep", func() bool { return e.adminApp("db")["status"] == "Down" })
}

// withoutRoute cuts the route of app id out of a dockerEnv's configuration.
func withoutRoute(cfg, id string) string {
	i := strings.Index(cfg, "  - id: "+id+"\n    frontend:")
	if i < 0 {
		return cfg
	}
	j := strings.Index(cfg[i+1:], "\n  - id: ")
	if j < 0 {
		return cfg[:i]
	}
	return cfg[:i] + cfg[i+1+j+1:]
}

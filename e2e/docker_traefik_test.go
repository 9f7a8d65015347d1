package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// A container labelled reaper.traefik=true gets its route into /traefik with no
// node.auth_traefik_routes, and keeps it while it sleeps (its container
// stopped: Traefik must not turn it into a 404); a container without the label
// does not; the answer's bytes stay the same from one call to the next.
func TestDocker_TraefikLabelPutsTheRouteInTheProvider(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	shown := e.add(dockerApp{id: "shown", labels: []string{"reaper.traefik=true"}}, nil)
	e.add(dockerApp{id: "plain", labels: []string{}}, nil)
	auth := freeport.Addr(t)
	e.dir = t.TempDir()
	e.p = startReaper(t, e.dir, strings.Replace(e.config(), "  data_dir:", "  auth_listen: "+auth+"\n  data_dir:", 1))
	e.waitStatus("shown", "Down", 20*time.Second)
	e.waitStatus("plain", "Down", 20*time.Second)

	get := func() (string, map[string]any) {
		resp, err := http.Get("http://" + auth + "/traefik")
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("/traefik: %d %s", resp.StatusCode, body)
		}
		var c struct {
			HTTP struct{ Routers map[string]any } `json:"http"`
		}
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return body, c.HTTP.Routers
	}
	var body string
	testwait.For(t, 10*time.Second, "the labelled container's route in /traefik", func() bool {
		var routers map[string]any
		body, routers = get()
		return routers["reaper-shown"] != nil
	})
	if _, r := get(); r["reaper-plain"] != nil || len(r) != 1 {
		t.Errorf("/traefik gives routes no label or config asked for: %s", body)
	}
	if !strings.Contains(body, `"url":"http://`+shown.addr+`"`) {
		t.Errorf("the service is not the route's target %s: %s", shown.addr, body)
	}
	if s := dockertest.State(t, shown.container); s != "created" && s != "exited" {
		t.Errorf("the container is %s: the route is given while it sleeps, it should not run", s)
	}
	if again, _ := get(); again != body {
		t.Errorf("a second answer differs:\n%s\n%s", again, body)
	}
}

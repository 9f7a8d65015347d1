package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
)

// A container's reaper.grace_period wins over its route's: under a route whose
// grace period is an hour, a container labelled 2s sleeps after 2 s idle, and
// the admin API says so (with where it came from, and a reap_at 2 s after the
// request), with the boot time and the memory the driver measured.
func TestDocker_GracePeriodLabelWinsOverTheRoutes(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	a := e.add(dockerApp{id: "own", grace: "1h", labels: []string{"reaper.grace_period=2s"}}, nil)
	p := e.start()
	e.waitStatus("own", "Down", 10*time.Second)
	resp, err := p.request("GET", "own.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("the wake: %d %s", resp.StatusCode, body)
	}
	last := time.Now()
	v := e.adminApp("own")
	if v["grace_period"] != "2s" || !strings.Contains(v["grace_period_from"].(string), "label reaper.grace_period of container "+a.container) {
		t.Errorf("admin API: grace_period %v from %v, want the label's 2s", v["grace_period"], v["grace_period_from"])
	}
	if s, _ := v["reap_at"].(string); s != "" {
		at, _ := time.Parse(time.RFC3339Nano, s)
		if d := at.Sub(last); d > 2*time.Second || d < -time.Second {
			t.Errorf("reap_at %s is %s after the request, want about 2s", s, d)
		}
	} // else: already idle past it on a slow machine
	if boot, err := time.ParseDuration(v["boot_time"].(string)); err != nil || boot <= 0 {
		t.Errorf("boot_time %v: want the start the driver timed", v["boot_time"])
	}
	testwait.For(t, 20*time.Second, "the container to be put to sleep", func() bool { return dockertest.State(t, a.container) == "exited" })
	if idle := time.Since(last); idle < 2*time.Second {
		t.Errorf("put to sleep %s after the last request, before the label's 2s", idle)
	}
	e.waitStatus("own", "Down", 10*time.Second)
	if mem, _ := e.adminApp("own")["memory_bytes"].(float64); mem <= 0 {
		t.Errorf("memory_bytes %v once asleep, want what the container held awake", mem)
	}
	p.waitLog(func(l map[string]any) bool {
		return l["msg"] == "app status changed" && l["app"] == "own" && l["to"] == "WaitingForShutdown" && strings.Contains(fmt.Sprint(l["cause"]), "idle for 2s")
	}, 5*time.Second)
}

//go:build linux

package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
)

// A real engine restart: a second dockerd of the test's own (the machine's
// engine is not touched), a container of it with restart: always that reaper
// put to sleep, the engine stopped (SIGTERM) and started again on the same
// directories. The engine brings the container back; reaper sees it up, says
// why it came back, and puts it back to sleep on its normal clock — after its
// grace period, once, with no start of its own (counted from the engine's
// events).
func TestDocker_EngineRestartBringsBackAContainerThatSleepsAgainOnTime(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	eng := dockertest.StartEngine(t)
	eng.Load(t, e.image)
	e.host = eng.Host
	// The engine has a network namespace of its own: reaper cannot reach the
	// container, so it is ready once it runs (no probe), and woken by an
	// operator rather than by a request.
	name := dockertest.Name(t, "back")
	eng.Docker(t, "create", "--name", name, "--restart", "always", "--network", "none",
		"--label", "reaper.enable=true", "--label", "reaper.app_id=back",
		e.image, "--listen", ":8080", "--name", "back", "--shutdown-timeout", "1s") // removed with the engine
	const grace = 3 * time.Second
	e.apps["back"] = &dockerApp{id: "back", container: name, addr: "127.0.0.1:9", grace: grace.String(), labels: []string{}}
	p := e.start()
	e.waitStatus("back", "Down", 15*time.Second)

	began := time.Now()
	req, _ := http.NewRequest("POST", "http://"+p.admin+"/api/apps/back/_wake", nil)
	req.Header.Set("Authorization", "Bearer "+dockerAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("wake: %d %s", resp.StatusCode, body)
	}
	waitContainer := func(want string, limit time.Duration) {
		t.Helper()
		testwait.For(t, limit, "the container "+want, func() bool { return eng.Docker(t, "inspect", "--format", "{{.State.Status}}", name) == want })
	}
	waitContainer("running", 15*time.Second)
	waitContainer("exited", 30*time.Second) // put to sleep by reaper
	e.waitStatus("back", "Down", 10*time.Second)
	if ev := eng.ContainerEvents(t, name, began); count(ev, "start") != 1 || count(ev, "stop") != 1 {
		t.Fatalf("before the restart the engine saw %v: want reaper's start and stop", ev)
	}

	restarted := time.Now()
	eng.Restart(t)
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "docker engine lost: reconnecting" }, 30*time.Second)
	p.waitLog(func(l map[string]any) bool {
		msg, _ := l["msg"].(string)
		return l["app"] == "back" && strings.Contains(msg, `brought back by its restart policy "always" as the engine restarted`)
	}, 30*time.Second)
	startedAt, err := time.Parse(time.RFC3339Nano, eng.Docker(t, "inspect", "--format", "{{.State.StartedAt}}", name))
	if err != nil || startedAt.Before(restarted) {
		t.Fatalf("the container last started at %s (%v), want after the engine's restart at %s", startedAt, err, restarted)
	}
	p.waitLog(func(l map[string]any) bool {
		return l["msg"] == "app status changed" && l["app"] == "back" && l["to"] == "Up" && logTime(t, l).After(restarted)
	}, 30*time.Second)
	waitContainer("exited", 30*time.Second)
	if awake := time.Since(startedAt); awake < grace {
		t.Errorf("put back to sleep %s after the engine brought it back, before its %s grace period", awake, grace)
	}
	e.waitStatus("back", "Down", 10*time.Second)
	// No flapping: in two grace periods more, nothing starts it again.
	if testwait.Until(2*grace, func() bool { return count(eng.ContainerEvents(t, name, restarted), "start") > 1 }) {
		t.Errorf("started again after it was put back to sleep: %v", eng.ContainerEvents(t, name, restarted))
	}
	if ev := eng.ContainerEvents(t, name, restarted); count(ev, "start") != 1 || count(ev, "stop") != 1 {
		t.Errorf("after the restart the engine saw %v: want its own start and reaper's stop, once each", ev)
	}
	if n := strings.Count(p.logText(), `"msg":"container put to sleep"`); n != 2 {
		t.Errorf("put to sleep %d times, want 2 (before and after the restart)", n)
	}
}

// count counts the events of one action.
func count(events []string, action string) int {
	return len(slices.DeleteFunc(slices.Clone(events), func(a string) bool { return a != action }))
}

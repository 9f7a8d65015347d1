//go:build linux

package process

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// TestDriver_Contract runs paas.Client's contract against real child processes:
// two demo apps, and one whose program does not exist. Each app's command goes
// through a shell that notes every spawn in a file before it becomes the app, so
// that the suite counts the processes the driver really spawned.
func TestDriver_Contract(t *testing.T) {
	paastest.Run(t, func(t *testing.T) paastest.Harness {
		dir := t.TempDir()
		spawns := func(id string) string { return filepath.Join(dir, id+".spawns") }
		var apps []AppConfig
		addrs := map[string]string{}
		for _, id := range []string{"web", "api"} {
			addrs[id] = freeport.Addr(t)
			cfg := demo(t, id, addrs[id])
			cfg.Command = append([]string{"/bin/sh", "-c", `echo spawned >> "$0" && exec "$@"`, spawns(id)}, cfg.Command...)
			apps = append(apps, cfg)
		}
		broken := AppConfig{ID: "broken", Command: []string{filepath.Join(dir, "no-such-program")}, Ready: ReadyConfig{TCP: freeport.Addr(t)}}
		d, _ := newDriver(t, "", append(apps, broken)...)
		markers := map[string]string{"web": markerOf(apps[0]), "api": markerOf(apps[1]), "broken": broken.Command[0]}
		return paastest.Harness{
			Client: d,
			Apps:   [2]paas.App{{ID: "web"}, {ID: "api"}},
			Starts: func(t *testing.T, app paas.App) int {
				b, err := os.ReadFile(spawns(app.ID))
				if os.IsNotExist(err) {
					return 0
				}
				if err != nil {
					t.Fatal(err)
				}
				return bytes.Count(b, []byte("spawned\n"))
			},
			Running: func(t *testing.T, app paas.App) int { return countProcs(t, markers[app.ID]) },
			Serves:  func(_ *testing.T, app paas.App) bool { return servesHealthz(addrs[app.ID]) },
			StopOutside: func(t *testing.T, app paas.App) {
				pid, _ := procOf(d, app.ID)
				if pid == 0 {
					t.Fatalf("%s: no process to kill", app)
				}
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			},
			Failing: paas.App{ID: "broken"},
		}
	})
}

// servesHealthz reports whether a demo app answers its /healthz on addr.
func servesHealthz(addr string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

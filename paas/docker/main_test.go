package docker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// These tests drive a real Docker engine, through dockertest's allow-list proxy:
// any call outside the driver's least privilege fails them. They skip when no
// engine answers (REAPER_REQUIRE_DOCKER=1 makes that a failure).

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveImages()
	os.Exit(code)
}

// waitLong bounds every wait: generous, since the machine is shared.
const waitLong = 15 * time.Second

// env is an engine behind a proxy, and the demo app's image.
type env struct {
	t     *testing.T
	proxy *dockertest.Proxy
	image string
	logs  *logtest.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dockertest.Require(t)
	e := &env{t: t, proxy: dockertest.NewProxy(t), image: dockertest.BuildImage(t, "cmd/demoapp"), logs: &logtest.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("driver log:\n%s", e.logs.String())
		}
	})
	return e
}

// demo creates a stopped container of the demo app, its port 8080 published on a
// free loopback port; opts go to docker create, flags to the app. It returns the
// container's name and the published address.
func (e *env) demo(short string, opts []string, flags ...string) (string, string) {
	e.t.Helper()
	addr := freeport.Addr(e.t)
	args := append([]string{"-p", addr + ":8080"}, opts...)
	args = append(args, e.image, "--listen", ":8080", "--name", short, "--shutdown-timeout", "1s")
	return dockertest.Create(e.t, short, append(args, flags...)...), addr
}

// demoApp declares the demo container name as app id, ready when its /healthz answers
// through the published port (the port proxy fails an HTTP probe until the app
// answers; tcp probes are in ready_test.go).
func demoApp(id, name, addr string) AppConfig {
	return AppConfig{ID: id, Container: name, Ready: &probe.Config{HTTP: "http://" + addr + "/healthz"}}
}

// driver opens a driver on the proxy with cfg; it is closed in t.Cleanup.
func (e *env) driver(cfg Config) *Driver {
	e.t.Helper()
	if len(cfg.Hosts) == 0 && cfg.Host == "" {
		cfg.Host = e.proxy.Host()
	}
	d, err := New(Options{Config: cfg, Logger: e.logs.Logger(slog.LevelDebug)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { d.Close() })
	return d
}

// observe returns the app's observation, failing the test on an error.
func observe(t *testing.T, d *Driver, id string) paas.Observation {
	t.Helper()
	obs, err := d.Observe(context.Background(), paas.App{ID: id})
	if err != nil {
		t.Fatalf("observe %s: %v", id, err)
	}
	return obs
}

// waitState waits until the app is observed in state.
func waitState(t *testing.T, d *Driver, id string, state paas.State) paas.Observation {
	t.Helper()
	var obs paas.Observation
	var err error
	if !testwait.Until(waitLong, func() bool {
		obs, err = d.Observe(context.Background(), paas.App{ID: id})
		return err == nil && obs.State == state
	}) {
		t.Fatalf("%s: not %s after %v: last %+v, err %v", id, state, waitLong, obs, err)
	}
	return obs
}

// waitContainer waits until the container's status is want.
func waitContainer(t *testing.T, name, want string) {
	t.Helper()
	var got string
	if !testwait.Until(waitLong, func() bool { got = dockertest.State(t, name); return got == want }) {
		t.Fatalf("container %s: %s after %v, want %s", name, got, waitLong, want)
	}
}

// answers reports whether the app answers on addr.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("GET /healthz HTTP/1.0\r\n\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 12)
	n, _ := c.Read(buf)
	return strings.HasPrefix(string(buf[:n]), "HTTP/1.")
}

// recorder records the ids a Watch pushed.
type recorder struct {
	mu  sync.Mutex
	ids map[string]int
}

func watch(d *Driver) *recorder {
	r := &recorder{ids: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	_ = cancel // ends with the driver
	d.Watch(ctx, func(id string) {
		r.mu.Lock()
		r.ids[id]++
		r.mu.Unlock()
	})
	return r
}

func (r *recorder) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

// isStartFailed reports whether err says the app could not be started.
func isStartFailed(err error) bool { return errors.Is(err, paas.ErrStartFailed) }

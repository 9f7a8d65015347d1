package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// A container behind a TCP route: Redis in a FROM-scratch image, created
// stopped, started by the first connection and stopped once quiet. Its redis
// probe names the port it publishes; the driver sends it to the container's own
// address (the engine's port proxy accepts before Redis listens).
func TestTCP_AContainerBehindATCPRouteWakesOnAConnection(t *testing.T) {
	dockertest.Require(t)
	proxy := dockertest.NewProxy(t)
	image := dockertest.BuildRedisImage(t)
	addr := freeport.Addr(t)
	container := dockertest.Create(t, "tcpcache", "-p", addr+":6379", image, "--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no")
	p := startReaper(t, t.TempDir(), fmt.Sprintf(`
node: {id: e2e, listen: "127.0.0.1:0", data_dir: "%%DIR%%/data", shutdown_timeout: 5s}
reaper: {job_interval: 1s, fast_interval: 200ms}
paas:
  driver: docker
  docker:
    host: %s
    labels: false
    apps:
      - {id: db, container: %s, stop_timeout: 3s, ready: {redis: %q}}
tcp_routes:
  - {id: db-tcp, listen: "127.0.0.1:0", app_id: db, target: %q, grace_period: 2s, fail_timeout: 60s}
`, proxy.Host(), container, addr, addr))
	waitStatus(p, "Down", 1, 20*time.Second)
	route := p.tcpAddr("db-tcp")

	if got, err := pgtestRedis(route, "PING"); err != nil || !strings.HasPrefix(got, "+PONG") {
		t.Fatalf("PING through the route to the sleeping container: %q, %v\n%s", got, err, warnLines(p))
	}
	if st := dockertest.State(t, container); st != "running" {
		t.Errorf("container %s after the connection, want running", st)
	}
	wantStarts(t, p, 1)
	waitStatus(p, "Down", 2, 30*time.Second)
	testwait.For(t, 10*time.Second, "the container stopped", func() bool { return dockertest.State(t, container) == "exited" })
}

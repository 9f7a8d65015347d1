package e2e

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestTCP_ConnectionsOnTwoNodesOfAClusterStartTheAppOnce(t *testing.T) {
	// Every node listens on the route's port (its own, here: port 0) and asks
	// the leader for the wake, as for HTTP. The target is the fake Clever Cloud
	// app's edge, spoken to in HTTP over the TCP route.
	const tcpRoutes = `
tcp_routes:
  - {id: web-tcp, listen: "127.0.0.1:0", app_id: "%ID:web%", target: "%EDGE:web%", fail_timeout: 30s, ready_delay: 0.2}
`
	e := newClusterExtra(t, clusterClever(), 3, tcpRoutes, clusterApp{name: "web", state: fakeclever.StateShouldBeDown,
		handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the app itself")) })})
	e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)

	var wg sync.WaitGroup
	for _, n := range e.nodes[:2] {
		addr := n.p.tcpAddr("web-tcp")
		for range 5 {
			wg.Go(func() {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := c.Write([]byte("GET / HTTP/1.0\r\nHost: web.test\r\n\r\n")); err != nil {
					t.Error(err)
					return
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Errorf("through %s: %v", n.id, err)
					return
				}
				if resp.StatusCode != http.StatusOK {
					t.Errorf("through %s: %s, want the app's answer", n.id, resp.Status)
				}
			})
		}
	}
	wg.Wait()
	e.checkOneStart("web")
}

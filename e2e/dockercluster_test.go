package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/leader"
)

// A cluster across hosts: three reaper nodes, each a container of reaper's own
// image (the Dockerfile's, as make image builds it), a redis-server container (the machine's own binary and its
// libraries, FROM scratch) and the apps' containers, all on one private network
// with no way out (--internal). Each node also sits on an access network where its
// gateway and admin ports are published on loopback, for the test. The nodes drive
// the engine through the allow-list proxy's socket, mounted into them, so that the
// test counts every start whoever sends it. Cutting a node off the private network
// (docker network disconnect) is a real partition: it still reaches the engine's
// socket, and must not act.

const dockerClusterSecret = "docker-cluster-secret-0123456789"

type dockerNode struct {
	id, container    string
	gateway, adminAt string // published on loopback
}

type dockerCluster struct {
	t      *testing.T
	proxy  *dockertest.Proxy
	net    string // the private network
	nodes  []*dockerNode
	web    string // the app's container
	client *http.Client
}

func newDockerCluster(t *testing.T) *dockerCluster {
	t.Helper()
	dockertest.Require(t)
	c := &dockerCluster{t: t, proxy: dockertest.NewProxy(t), client: &http.Client{Timeout: 3 * time.Second}}
	reaperImage := dockertest.BuildReaperImage(t)
	demoImage := dockertest.BuildImage(t, "cmd/demoapp")
	redisImage := dockertest.BuildRedisImage(t)
	c.net = dockertest.Network(t, "private", "--internal")
	access := dockertest.Network(t, "access")

	redis := dockertest.Create(t, "redis", "--network", c.net, "--network-alias", "redis", redisImage,
		"--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no")
	// Short names on the private network: container names are too long for DNS.
	c.web = dockertest.Create(t, "web", "--network", c.net, "--network-alias", "web", demoImage, "--listen", ":8080", "--name", "web", "--shutdown-timeout", "1s")
	dockertest.Docker(t, "start", redis)
	for i := range 3 {
		c.nodes = append(c.nodes, &dockerNode{id: fmt.Sprintf("n%d", i+1), container: dockertest.Name(t, fmt.Sprintf("n%d", i+1))})
	}
	socketDir := filepath.Dir(strings.TrimPrefix(c.proxy.Host(), "unix://"))
	for _, n := range c.nodes {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "reaper.yaml"), []byte(c.config(n)), 0o644); err != nil {
			t.Fatal(err)
		}
		// Root in the container: the proxy's socket, and the directory holding it,
		// are the test process's own (0700), which the image's user 65532 cannot open.
		dockertest.Create(t, n.id, "--network", access, "-p", "127.0.0.1::8080", "-p", "127.0.0.1::9090",
			"-v", dir+":/etc/reaper:ro", "-v", socketDir+":/run/reaper-docker", "--user", "0:0",
			reaperImage, "serve", "--config", "/etc/reaper/reaper.yaml", "--log-format", "json")
		dockertest.Docker(t, "network", "connect", "--alias", n.id, c.net, n.container)
		t.Cleanup(func() {
			if t.Failed() {
				logs, _ := dockertest.TryDocker("logs", "--tail", "60", n.container)
				t.Logf("%s log (end):\n%s", n.id, logs)
			}
		})
	}
	for _, n := range c.nodes {
		dockertest.Docker(t, "start", n.container)
		n.gateway, n.adminAt = dockertest.Port(t, n.container, "8080/tcp"), dockertest.Port(t, n.container, "9090/tcp")
	}
	return c
}

func (c *dockerCluster) config(n *dockerNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, `node: {id: %s, listen: "0.0.0.0:8080", admin_listen: "0.0.0.0:9090", admin_token: %s, data_dir: /data, shutdown_timeout: 5s, max_wakes_per_client: 0}
reaper: {job_interval: 1s, fast_interval: 200ms}
store: {driver: valkey, address: "redis:6379"}
cluster:
  raft_listen: "0.0.0.0:7000"
  secret: %q
  peers:
`, n.id, clusterAdminToken, dockerClusterSecret)
	for _, p := range c.nodes {
		fmt.Fprintf(&b, "    - {id: %s, raft_addr: \"%s:7000\", api_addr: \"%s:9090\"}\n", p.id, p.id, p.id)
	}
	// A fail timeout of 15 s, under the client's 20 s: on a loaded machine a
	// docker start alone took 8.4 s, past the 8 s it had.
	fmt.Fprintf(&b, `paas:
  driver: docker
  docker:
    host: unix:///run/reaper-docker/docker.sock
    labels: false
    apps: [{id: web, container: %s, ready: {tcp: "web:8080"}}]
routes:
  - id: web
    frontend: {domains: [web.test]}
    backend: {targets: ["http://web:8080"]}
    plugins: [{plugin: reaper, config: {app_id: web, grace_period: 3s, fail_timeout: 15s}}]
`, c.web)
	return b.String()
}

// status is GET /api/cluster on the node.
func (c *dockerCluster) status(n *dockerNode) (leader.Status, error) {
	var st leader.Status
	req, _ := http.NewRequest("GET", "http://"+n.adminAt+"/api/cluster?probe=false", nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := c.client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("GET /api/cluster: %d", resp.StatusCode)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitLeader waits until every node of nodes names the same leader, which is not
// notID, and returns it.
func (c *dockerCluster) waitLeader(nodes []*dockerNode, notID string, limit time.Duration) *dockerNode {
	c.t.Helper()
	var lead string
	var last []string
	if !testwait.Until(limit, func() bool {
		last, lead = last[:0], ""
		for _, n := range nodes {
			st, err := c.status(n)
			if err != nil {
				last = append(last, n.id+": "+err.Error())
				return false
			}
			last = append(last, fmt.Sprintf("%s: %s leader %q", n.id, st.State, st.LeaderID))
			if st.LeaderID == "" || st.LeaderID == notID || (lead != "" && st.LeaderID != lead) {
				return false
			}
			lead = st.LeaderID
		}
		return true
	}) {
		c.t.Fatalf("no leader agreed on after %v: %s", limit, strings.Join(last, "; "))
	}
	for _, n := range c.nodes {
		if n.id == lead {
			return n
		}
	}
	c.t.Fatalf("leader %q is not a node", lead)
	return nil
}

// get asks for web.test through the node's gateway.
func (c *dockerCluster) get(n *dockerNode) (int, string) {
	req, _ := http.NewRequest("GET", "http://"+n.gateway+"/", nil)
	req.Host = "web.test"
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	k, _ := resp.Body.Read(buf)
	b.Write(buf[:k])
	return resp.StatusCode, b.String()
}

func TestDockerCluster_PartitionedNodeStopsActingMajorityWakesAndSleeps(t *testing.T) {
	t.Parallel()
	c := newDockerCluster(t)
	lead := c.waitLeader(c.nodes, "", 60*time.Second)
	t.Logf("leader: %s", lead.id)
	webID := dockertest.ID(t, c.web)

	// Cut the leader off the private network: a real partition. It keeps the
	// engine's socket.
	dockertest.Docker(t, "network", "disconnect", c.net, lead.container)
	var majority []*dockerNode
	for _, n := range c.nodes {
		if n != lead {
			majority = append(majority, n)
		}
	}
	newLead := c.waitLeader(majority, lead.id, 30*time.Second)
	t.Logf("new leader among the majority: %s", newLead.id)
	testwait.For(t, 15*time.Second, "the cut node to stop leading", func() bool {
		st, err := c.status(lead)
		return err == nil && st.State != leader.StateLeader
	})

	// The cut node holds a request for the sleeping app and never starts it.
	code, body := c.get(lead)
	if code == 200 {
		t.Errorf("the cut node served the app: %d %s", code, body)
	}
	if n := c.proxy.Starts(webID); n != 0 {
		t.Fatalf("the app was started %d times while only the cut node was asked", n)
	}
	// The majority wakes it, once.
	if code, body := c.get(majority[0]); code != 200 || !strings.Contains(body, `"name":"web"`) {
		t.Fatalf("through the majority: %d %s, want the app's answer", code, body)
	}
	if n := c.proxy.Starts(webID); n != 1 {
		t.Errorf("the app was started %d times, want 1", n)
	}
	// And puts it to sleep after its grace period.
	testwait.For(t, 30*time.Second, "the majority to put the app to sleep", func() bool {
		return dockertest.State(t, c.web) == "exited"
	})

	// The cut node rejoins and follows the leader of the majority.
	dockertest.Docker(t, "network", "connect", "--alias", lead.id, c.net, lead.container)
	if back := c.waitLeader(c.nodes, "", 30*time.Second); back == lead {
		t.Logf("the rejoined node became leader again (a new election)")
	}
	if code, body := c.get(lead); code != 200 {
		t.Errorf("through the rejoined node: %d %s, want the app's answer", code, body)
	}
	if n := c.proxy.Starts(webID); n != 2 {
		t.Errorf("%d starts in all, want 2 (one per wake)", n)
	}
}

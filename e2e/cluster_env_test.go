package e2e

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/certtest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// These tests run a cluster of real reaper processes: Raft over loopback TCP
// between them, one real redis-server as their shared store, and the fake Clever
// Cloud in-process, so that the tests count its starts and stops. Every node has
// the same routes, each sending traffic to a fake app's own edge listener.

const clusterAdminToken = "cluster-e2e-admin-token-123"

// clusterApp is one fake Clever Cloud app behind a route named <name>.test.
type clusterApp struct {
	name  string
	state string // the fake's initial state: SHOULD_BE_UP (default) or SHOULD_BE_DOWN
	// The reaper plugin's keys; empty takes 60s and 30s.
	grace, failTimeout string
	// handler answers for the app while it runs; nil: the fake's JSON answer.
	handler http.Handler
	// noRoute: the app has no route (a worker that its group or a trigger
	// wakes); extra must name it, as a group member.
	noRoute bool
}

// clusterNode is one reaper of the cluster, with the addresses its peers know.
type clusterNode struct {
	id, raftAddr, apiAddr string
	dir                   string
	p                     *reaperProc
	// With TLS: its cluster.tls files.
	certFile, keyFile, caFile string
}

// clusterEnv is a fake Clever Cloud, a redis-server and reaper nodes.
type clusterEnv struct {
	t      *testing.T
	fake   *fakeclever.Fake
	token  string
	secret string
	redis  *redistest.Server
	apps   []clusterApp
	ids    map[string]string // app name → app id
	nodes  []*clusterNode
	// With TLS: the cluster's CA, its file, and a client of the admin listeners
	// that trusts it; nil without.
	ca     *certtest.CA
	caFile string
	admin  *http.Client
	// extra is appended to every node's configuration; nodeExtra(id), when
	// set, to its node section.
	extra     string
	nodeExtra func(id string) string
}

// clusterClever are the fake's timings: short, each phase long enough for the
// fast tick (200 ms) to see.
func clusterClever() fakeclever.Options {
	return fakeclever.Options{BootTime: time.Second, DeployDelay: 300 * time.Millisecond, StopLinger: 300 * time.Millisecond}
}

func clusterRandom(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newCluster starts the fake with the apps, a redis-server with persistence, and
// size nodes that bootstrap one cluster together.
func newCluster(t *testing.T, opts fakeclever.Options, size int, apps ...clusterApp) *clusterEnv {
	t.Helper()
	return newClusterWith(t, opts, size, nil, "", apps...)
}

// newClusterExtra is newCluster with extra appended to every node's
// configuration (top-level sections, such as events).
func newClusterExtra(t *testing.T, opts fakeclever.Options, size int, extra string, apps ...clusterApp) *clusterEnv {
	t.Helper()
	return newClusterWith(t, opts, size, nil, extra, apps...)
}

// newTLSCluster is newCluster with cluster.tls: ca signs every node's
// certificate, for 127.0.0.1.
func newTLSCluster(t *testing.T, opts fakeclever.Options, size int, ca *certtest.CA, apps ...clusterApp) *clusterEnv {
	t.Helper()
	return newClusterWith(t, opts, size, ca, "", apps...)
}

func newClusterWith(t *testing.T, opts fakeclever.Options, size int, ca *certtest.CA, extra string, apps ...clusterApp) *clusterEnv {
	t.Helper()
	return newClusterNodeExtra(t, opts, size, ca, extra, nil, apps...)
}

// newClusterNodeExtra is newClusterWith with nodeExtra(id) added to the node
// section of each node's configuration.
func newClusterNodeExtra(t *testing.T, opts fakeclever.Options, size int, ca *certtest.CA, extra string, nodeExtra func(id string) string, apps ...clusterApp) *clusterEnv {
	t.Helper()
	e := &clusterEnv{t: t, apps: apps, ids: map[string]string{}, extra: extra, nodeExtra: nodeExtra,
		token: clusterRandom("cc-cluster-token-"), secret: clusterRandom("cluster-secret-"), admin: clusterClient}
	if ca != nil {
		e.ca, e.caFile = ca, certtest.Write(t, t.TempDir(), "ca.crt", ca.PEM)
		e.admin = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	}
	e.redis = redistest.Start(t, redistest.Options{Persist: true})
	opts.Token = e.token
	e.fake = fakeclever.New(opts)
	if err := e.fake.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.fake.Close)
	for _, a := range apps {
		state := a.state
		if state == "" {
			state = fakeclever.StateShouldBeUp
		}
		added := e.fake.AddApp(fakeclever.App{Name: a.name, State: state, EdgeAddr: "127.0.0.1:0", Handler: a.handler})
		e.ids[a.name] = added.ID
	}
	initial := make([]*clusterNode, size)
	for i := range initial {
		initial[i] = e.newNode(fmt.Sprintf("n%d", i+1))
	}
	for _, n := range initial {
		e.start(n, initial)
	}
	return e
}

// newNode picks the node's Raft and admin ports (its peers need them before it
// starts) and its directory; with TLS, it makes its certificate.
func (e *clusterEnv) newNode(id string) *clusterNode {
	n := &clusterNode{id: id, raftAddr: freeport.Addr(e.t), apiAddr: freeport.Addr(e.t), dir: e.t.TempDir()}
	if e.ca != nil {
		n.certFile, n.keyFile = e.ca.Issue(e.t, id, certtest.Options{}).Files(e.t, n.dir, id)
		n.caFile = e.caFile
	}
	return n
}

// adminURL is the URL of path on the node's admin listener.
func (e *clusterEnv) adminURL(n *clusterNode, path string) string {
	if e.ca != nil {
		return "https://" + n.apiAddr + path
	}
	return "http://" + n.apiAddr + path
}

// start runs reaper for n with peers as its cluster.peers, and waits until it serves.
func (e *clusterEnv) start(n *clusterNode, peers []*clusterNode) {
	e.t.Helper()
	n.p = startReaper(e.t, n.dir, e.config(n, peers))
	e.nodes = append(e.nodes, n)
	e.t.Cleanup(func() {
		n.p.kill()
		text := n.p.logText()
		if strings.Contains(text, e.secret) || strings.Contains(text, e.token) {
			e.t.Errorf("%s: the cluster secret or the API token appears in reaper's log", n.id)
		}
		if e.t.Failed() {
			e.t.Logf("%s log (warnings and above):\n%s", n.id, warnLines(n.p))
			if dir := os.Getenv("E2E_CLUSTER_LOGS"); dir != "" {
				name := strings.ReplaceAll(e.t.Name(), "/", "_") + "-" + n.id + ".log"
				_ = os.WriteFile(filepath.Join(dir, name), []byte(n.p.logText()), 0o644)
			}
		}
	})
}

func (e *clusterEnv) config(n *clusterNode, peers []*clusterNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
node:
  id: %s
  listen: 127.0.0.1:0
  admin_listen: %s
  admin_token: %s
  data_dir: %%DIR%%/data
  shutdown_timeout: 5s
  max_wakes_per_client: 0 # the tests wake apps again and again from 127.0.0.1
reaper:
  job_interval: 1s
  fast_interval: 200ms
store:
  driver: valkey
  address: %s
cluster:
  raft_listen: %s
  secret: %q
  peers:
`, n.id, n.apiAddr, clusterAdminToken, e.redis.Addr(), n.raftAddr, e.secret)
	if e.nodeExtra != nil {
		// After the node section's last key, before reaper:.
		s := b.String()
		i := strings.Index(s, "reaper:\n")
		b.Reset()
		b.WriteString(s[:i] + e.nodeExtra(n.id) + s[i:])
	}
	if len(peers) == 0 {
		b.WriteString("    []\n")
	}
	for _, p := range peers {
		fmt.Fprintf(&b, "    - {id: %s, raft_addr: %q, api_addr: %q}\n", p.id, p.raftAddr, p.apiAddr)
	}
	if n.certFile != "" {
		fmt.Fprintf(&b, "  tls: {cert: %q, key: %q, ca: %q}\n", n.certFile, n.keyFile, n.caFile)
	}
	fmt.Fprintf(&b, `paas:
  driver: clevercloud
  clevercloud:
    api_url: %q
    token: %q
    owner_id: %s
    timeout: 5s
routes:
`, e.fake.BridgeURL(), e.token, fakeclever.DefaultOrganisation)
	for _, a := range e.apps {
		if a.noRoute {
			continue
		}
		def := func(v, d string) string {
			if v == "" {
				return d
			}
			return v
		}
		fmt.Fprintf(&b, "  - id: %s\n    frontend: {domains: [%s.test]}\n    backend: {targets: [%q]}\n"+
			"    plugins:\n      - plugin: reaper\n        config: {app_id: %s, owner_id: %s, grace_period: %s, fail_timeout: %s, ready_delay: 0.2}\n",
			a.name, a.name, e.fake.AppEdgeURL(e.ids[a.name]), e.ids[a.name], fakeclever.DefaultOrganisation,
			def(a.grace, "60s"), def(a.failTimeout, "30s"))
	}
	// In extra, %ID:name% is the app's id and %EDGE:name% its edge's host:port.
	extra := e.extra
	for name, id := range e.ids {
		extra = strings.ReplaceAll(extra, "%ID:"+name+"%", id)
		extra = strings.ReplaceAll(extra, "%EDGE:"+name+"%", strings.TrimPrefix(e.fake.AppEdgeURL(id), "http://"))
	}
	b.WriteString(extra)
	return b.String()
}

// warnLines are the node's log lines at warning level and above.
func warnLines(p *reaperProc) string {
	var out []string
	for _, l := range p.logs() {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			b, _ := json.Marshal(l)
			out = append(out, string(b))
		}
	}
	return strings.Join(out, "\n")
}

// warnCount counts the node's log lines at warning level and above.
func warnCount(p *reaperProc) int {
	n := 0
	for _, l := range p.logs() {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			n++
		}
	}
	return n
}

func (e *clusterEnv) node(id string) *clusterNode {
	for _, n := range e.nodes {
		if n.id == id {
			return n
		}
	}
	e.t.Fatalf("no node %s", id)
	return nil
}

// others are the nodes of list other than n.
func others(list []*clusterNode, n *clusterNode) []*clusterNode {
	var out []*clusterNode
	for _, m := range list {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

var clusterClient = &http.Client{Timeout: 5 * time.Second}

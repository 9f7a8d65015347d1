package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/certtest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/leader"
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
	b.WriteString(e.extra)
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

// status is GET /api/cluster on the node's admin listener.
func (e *clusterEnv) status(n *clusterNode) (leader.Status, error) {
	var st leader.Status
	req, _ := http.NewRequest("GET", e.adminURL(n, "/api/cluster"), nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("GET /api/cluster: %d %s", resp.StatusCode, body)
	}
	return st, json.Unmarshal(body, &st)
}

// waitLeader waits until every node of nodes answers with the same leader (not
// notID), in the same term, with that leader saying it leads and no other node
// saying so, and returns the leader's status.
func (e *clusterEnv) waitLeader(nodes []*clusterNode, limit time.Duration, notID string) leader.Status {
	e.t.Helper()
	var lead leader.Status
	var last []string
	testwait.For(e.t, limit, "one leader agreed on by every node", func() bool {
		last = last[:0]
		sts := map[string]leader.Status{}
		for _, n := range nodes {
			st, err := e.status(n)
			if err != nil {
				last = append(last, n.id+": "+err.Error())
				return false
			}
			sts[n.id] = st
			last = append(last, fmt.Sprintf("%s: %s term %d leader %q", n.id, st.State, st.Term, st.LeaderID))
		}
		first := sts[nodes[0].id]
		if first.LeaderID == "" || first.LeaderID == notID {
			return false
		}
		leaders := 0
		for _, st := range sts {
			if st.LeaderID != first.LeaderID || st.Term != first.Term {
				return false
			}
			if st.State == leader.StateLeader {
				leaders++
				if st.ID != first.LeaderID {
					return false
				}
			}
		}
		lead = sts[first.LeaderID]
		return leaders == 1 && lead.State == leader.StateLeader
	})
	e.t.Logf("leader %s, term %d (%s)", lead.ID, lead.Term, strings.Join(last, "; "))
	return lead
}

// appStatus is the app's status as the node gives it through the status header.
func (e *clusterEnv) appStatus(n *clusterNode, name string) string {
	resp, err := n.p.request("GET", name+".test", "/", nil, "CleverCloud-Reaper", "status")
	if err != nil {
		return "unreachable: " + err.Error()
	}
	defer resp.Body.Close()
	var st struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return fmt.Sprintf("status request answered %d", resp.StatusCode)
	}
	return st.Status
}

// waitAppStatus waits until every node of nodes says the app is in status.
func (e *clusterEnv) waitAppStatus(nodes []*clusterNode, name, status string, limit time.Duration) {
	e.t.Helper()
	testwait.For(e.t, limit, name+" "+status+" on every node", func() bool {
		for _, n := range nodes {
			if e.appStatus(n, name) != status {
				return false
			}
		}
		return true
	})
}

// heldResult is what a request sent through a node got.
type heldResult struct {
	node  string
	code  int
	appID string // the app id of the fake's answer, when it is the app's 200
	body  string
	err   error
	at    time.Time // when the answer came
}

var holdClient = &http.Client{Timeout: 90 * time.Second}

// get sends an API request for the app through the node; written, when not nil,
// is closed once the request is on the wire.
func (e *clusterEnv) get(n *clusterNode, name string, written chan<- struct{}) heldResult {
	r := heldResult{node: n.id}
	req, _ := http.NewRequest("GET", n.p.url("/"), nil)
	req.Host = name + ".test"
	req.Header.Set("Accept", "application/json")
	if written != nil {
		var once sync.Once
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(written) }) },
		}))
	}
	resp, err := holdClient.Do(req)
	r.at = time.Now()
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r.code, r.body, r.err = resp.StatusCode, string(b), err
	if resp.StatusCode == 200 {
		var ans struct {
			AppID string `json:"app_id"`
		}
		_ = json.Unmarshal(b, &ans)
		r.appID = ans.AppID
	}
	return r
}

// getAll sends perNode requests for the app through each node at once, and
// returns a channel that receives every result; it returns once every request is
// on the wire.
func (e *clusterEnv) getAll(nodes []*clusterNode, name string, perNode int) <-chan heldResult {
	out := make(chan heldResult, len(nodes)*perNode)
	var wrote []chan struct{}
	for _, n := range nodes {
		for range perNode {
			w := make(chan struct{})
			wrote = append(wrote, w)
			go func() { out <- e.get(n, name, w) }()
		}
	}
	for _, w := range wrote {
		select {
		case <-w:
		case <-time.After(10 * time.Second):
			e.t.Fatalf("a request for %s could not be sent", name)
		}
	}
	return out
}

// expectApp receives n results and checks that each is the app's own 200.
func (e *clusterEnv) expectApp(results <-chan heldResult, n int, name string, limit time.Duration) []heldResult {
	e.t.Helper()
	var got []heldResult
	deadline := time.After(limit)
	for range n {
		select {
		case r := <-results:
			if r.err != nil || r.code != 200 || r.appID != e.ids[name] {
				e.t.Errorf("request through %s: %d %q %v, want the app's 200", r.node, r.code, r.body, r.err)
			}
			got = append(got, r)
		case <-deadline:
			e.t.Fatalf("only %d of %d requests for %s answered after %v", len(got), n, name, limit)
		}
	}
	return got
}

// apiCalls counts the fake's API calls for the app with that method on a path
// ending with suffix.
func (e *clusterEnv) apiCalls(name, method, suffix string) int {
	n := 0
	for _, c := range e.fake.Calls() {
		if c.App == e.ids[name] && c.Method == method && strings.HasSuffix(c.Path, suffix) {
			n++
		}
	}
	return n
}

// checkOneStart checks that the platform saw exactly one start of the app and no
// restart.
func (e *clusterEnv) checkOneStart(name string) {
	e.t.Helper()
	id := e.ids[name]
	if n := e.fake.Starts(id); n != 1 {
		e.t.Errorf("%s: %d starts at the platform, want exactly 1", name, n)
	}
	if n := e.fake.Restarts(id); n != 0 {
		e.t.Errorf("%s: %d restarts at the platform, want none", name, n)
	}
}

// adminInFlight is the in-flight count of GET /api/apps/{id} on the node's admin
// API, -1 when it cannot be read.
func (e *clusterEnv) adminInFlight(n *clusterNode, name string) int {
	req, _ := http.NewRequest("GET", e.adminURL(n, "/api/apps/"+e.ids[name]), nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var v struct {
		InFlight int `json:"in_flight"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return -1
	}
	return v.InFlight
}

// reaperCLI runs the reaper binary and returns its standard output.
func reaperCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.reaper, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("reaper %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// internalCall posts to a node's internal API, signed with secret when it is not
// empty.
func internalCall(t *testing.T, n *clusterNode, path, secret string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+n.apiAddr+path, nil)
	if secret != "" {
		leader.Sign(req, nil, []byte(secret), time.Now())
	}
	resp, err := clusterClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestCluster_ThreeNodesElectOneLeader(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")

	for _, n := range e.nodes {
		st, err := e.status(n)
		if err != nil {
			t.Fatal(err)
		}
		if st.ID != n.id || st.LeaderID != lead.ID || st.Term != lead.Term {
			t.Errorf("%s says id %s, leader %s, term %d; want %s, %s, %d", n.id, st.ID, st.LeaderID, st.Term, n.id, lead.ID, lead.Term)
		}
		if len(st.Members) != 3 {
			t.Fatalf("%s lists %d members, want 3: %+v", n.id, len(st.Members), st.Members)
		}
		for _, m := range st.Members {
			want := e.node(m.ID)
			if m.RaftAddr != want.raftAddr || m.APIAddr != want.apiAddr || !m.Voter || m.Leader != (m.ID == lead.ID) {
				t.Errorf("%s shows member %+v, want raft %s, api %s, voter, leader=%v", n.id, m, want.raftAddr, want.apiAddr, m.ID == lead.ID)
			}
		}

		out, err := reaperCLI(t, "cluster", "status", "--config", n.p.config)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "node "+n.id+":") || !strings.Contains(out, "leader "+lead.ID) {
			t.Errorf("reaper cluster status on %s does not name the node and the leader %s:\n%s", n.id, lead.ID, out)
		}
		for _, m := range e.nodes {
			if !slices.ContainsFunc(strings.Split(out, "\n"), func(line string) bool {
				// ID RAFT API VOTER LEADER, then the probe's REACH RTT STATE LAST CONTACT.
				f := strings.Fields(line)
				return len(f) >= 9 && f[0] == m.id && f[1] == m.raftAddr && f[2] == m.apiAddr && f[4] == fmt.Sprint(m.id == lead.ID) &&
					f[5] != "unreachable"
			}) {
				t.Errorf("reaper cluster status on %s has no line for member %s (%s, %s):\n%s", n.id, m.id, m.raftAddr, m.apiAddr, out)
			}
		}
	}

	// Internal calls: refused without the cluster's signature, on every node.
	for _, n := range e.nodes {
		if code := internalCall(t, n, "/internal/asks/x", ""); code != http.StatusUnauthorized {
			t.Errorf("%s: unsigned internal call answered %d, want 401", n.id, code)
		}
		if code := internalCall(t, n, "/internal/asks/x", "another-secret-of-32-characters!"); code != http.StatusUnauthorized {
			t.Errorf("%s: internal call signed with another secret answered %d, want 401", n.id, code)
		}
		// Signed with the secret, it gets past the check: the leader takes the
		// ask, a follower says it does not lead.
		want := http.StatusMisdirectedRequest
		if n.id == lead.ID {
			want = http.StatusAccepted
		}
		if code := internalCall(t, n, "/internal/asks/x", e.secret); code != want {
			t.Errorf("%s: signed internal call answered %d, want %d", n.id, code, want)
		}
	}
}

func TestCluster_RequestsHeldOnEveryNodeReleasedByOneStart(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)

	begin := time.Now()
	got := e.expectApp(e.getAll(e.nodes, "web", 1), 3, "web", 30*time.Second)
	e.checkOneStart("web")
	first, last := got[0].at, got[0].at
	for _, r := range got {
		if r.at.Before(first) {
			first = r.at
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	t.Logf("answered %v after the requests; %v between the first and the last answer", first.Sub(begin).Round(time.Millisecond), last.Sub(first).Round(time.Millisecond))
	// The nodes learn of the Up record by notification; their poll (2 s) is only
	// the fallback.
	if spread := last.Sub(first); spread > 2*time.Second {
		t.Errorf("the held requests were released %v apart: a node learned late that the app was up", spread)
	}
}

func TestCluster_LeaderKilledMidWakeNewLeaderCompletesIt(t *testing.T) {
	opts := clusterClever()
	opts.BootTime = 3 * time.Second
	e := newCluster(t, opts, 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	old := e.node(lead.ID)
	survivors := others(e.nodes, old)

	results := e.getAll(survivors[:1], "web", 1)
	testwait.For(t, 10*time.Second, "the platform got the start", func() bool { return e.fake.Starts(e.ids["web"]) == 1 })
	old.p.kill()
	killed := time.Now()

	next := e.waitLeader(survivors, 15*time.Second, old.id)
	t.Logf("new leader %s after %v", next.ID, time.Since(killed).Round(time.Millisecond))
	if next.Term <= lead.Term {
		t.Errorf("new leader's term %d, want more than %d", next.Term, lead.Term)
	}
	e.expectApp(results, 1, "web", 30*time.Second)
	e.node(next.ID).p.waitLog(func(l map[string]any) bool {
		return l["msg"] == "app status changed" && l["app"] == e.ids["web"] && l["to"] == "Up"
	}, 10*time.Second)
	e.waitAppStatus(survivors, "web", "Up", 10*time.Second)
	e.checkOneStart("web")
}

func TestCluster_LeaderKilledHoldingTheAppLockWakeStillCompletes(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown, failTimeout: "30s"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	old := e.node(lead.ID)
	survivors := others(e.nodes, old)

	// The leader's next call about the app takes 3 s: it holds the app's lock
	// meanwhile, and dies with it.
	e.fake.Inject(e.ids["web"], fakeclever.Fault{Kind: fakeclever.FaultSlow, Delay: 3 * time.Second, Count: 1})
	results := e.getAll(survivors[:1], "web", 1)
	// The lock is held by the slow step once the same token stays in it for a
	// while: other steps hold it for milliseconds.
	lockKey := "reaper:lock:" + e.ids["web"]
	var token string
	var since time.Time
	testwait.For(t, 10*time.Second, "the leader holds the app's lock in a slow step", func() bool {
		v, err := e.redis.Do("GET", lockKey)
		if err != nil || v == "" || v != token {
			token, since = v, time.Now()
			return false
		}
		return time.Since(since) > 300*time.Millisecond
	})
	old.p.kill()
	killed := time.Now()
	if v, err := e.redis.Do("GET", lockKey); err != nil || v != token {
		t.Fatalf("the lock was released before the leader died (%q, %v): the test did not play its case", v, err)
	}
	next := e.waitLeader(survivors, 15*time.Second, old.id)
	t.Logf("new leader %s after %v", next.ID, time.Since(killed).Round(time.Millisecond))

	// The held request's fail timeout is 30 s: the new leader must finish the wake
	// within it, although the dead leader's lock is still in the store.
	got := e.expectApp(results, 1, "web", 40*time.Second)
	t.Logf("answered %v after the leader died", got[0].at.Sub(killed).Round(time.Millisecond))
	e.checkOneStart("web")
}

func TestCluster_RedisRestartedMidRunLosesNoAskStartsOnce(t *testing.T) {
	opts := clusterClever()
	opts.BootTime = 2 * time.Second
	down := fakeclever.StateShouldBeDown
	e := newCluster(t, opts, 3,
		clusterApp{name: "before", state: down, failTimeout: "40s"},
		clusterApp{name: "during", state: down, failTimeout: "40s"})
	e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "before", "Down", 15*time.Second)
	e.waitAppStatus(e.nodes, "during", "Down", 15*time.Second)
	warnsBefore := map[string]int{}
	for _, n := range e.nodes {
		warnsBefore[n.id] = warnCount(n.p)
	}

	// Redis goes away just before a burst of requests on every node, and comes
	// back once every node has noticed.
	const perNode = 20
	e.redis.Stop()
	stopped := time.Now()
	before := e.getAll(e.nodes, "before", perNode)
	for _, n := range e.nodes {
		n.p.waitLog(func(l map[string]any) bool {
			at, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"]))
			return l["level"] == "WARN" && at.After(stopped)
		}, 10*time.Second)
	}
	e.redis.Restart()
	t.Logf("redis down for %v", time.Since(stopped).Round(time.Millisecond))
	got := e.expectApp(before, 3*perNode, "before", 45*time.Second)
	last := got[0].at
	for _, r := range got {
		if r.at.After(last) {
			last = r.at
		}
	}
	t.Logf("every request held through the outage answered %v after redis stopped", last.Sub(stopped).Round(time.Millisecond))
	e.checkOneStart("before")

	// Warnings: a few per node for the outage, not one per request.
	for _, n := range e.nodes {
		d := warnCount(n.p) - warnsBefore[n.id]
		t.Logf("%s: %d warnings for the outage", n.id, d)
		if d > 8 {
			t.Errorf("%s logged %d warnings for one outage and %d requests, want a handful:\n%s", n.id, d, perNode, warnLines(n.p))
		}
	}

	// Redis restarted while a wake is under way: the start is sent, the app boots.
	during := e.getAll(e.nodes, "during", 2)
	testwait.For(t, 15*time.Second, "the platform got the start", func() bool { return e.fake.Starts(e.ids["during"]) == 1 })
	restarted := time.Now()
	e.redis.Restart()
	got = e.expectApp(during, 6, "during", 45*time.Second)
	last = got[0].at
	for _, r := range got {
		if r.at.After(last) {
			last = r.at
		}
	}
	t.Logf("every request held through the restart answered %v after it", last.Sub(restarted).Round(time.Millisecond))
	e.checkOneStart("during")
}

func TestCluster_NodeKilledWithRequestsInFlightAppSleepsOnceTheyExpire(t *testing.T) {
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	const grace = 3 * time.Second
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "slow", grace: "3s", handler: slow})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "slow", "Up", 15*time.Second)
	victim := others(e.nodes, e.node(lead.ID))[0]

	// Two requests in flight through a follower, for longer than the grace period.
	sent := time.Now()
	results := e.getAll([]*clusterNode{victim}, "slow", 2)
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the requests did not reach the app")
		}
	}
	// The leader sees them through the store, where the follower flushes its counts.
	testwait.For(t, 10*time.Second, "the leader's view of the app shows 2 requests in flight", func() bool {
		return e.adminInFlight(e.node(lead.ID), "slow") == 2
	})
	// A job pass reads the app's state: GET /v2/summary for several apps, a GET
	// of the app for one.
	summaries := func() int {
		n := 0
		for _, c := range e.fake.Calls() {
			if c.Method == "GET" && (c.Path == "/v2/summary" || strings.HasSuffix(c.Path, "/applications/"+e.ids["slow"])) {
				n++
			}
		}
		return n
	}
	var base int
	testwait.For(t, 20*time.Second, "the grace period over, and three full passes after it", func() bool {
		if time.Since(sent) < grace {
			base = summaries()
			return false
		}
		return summaries() >= base+3
	})
	// The leader may have marked the app WaitingForShutdown before the follower's
	// counts reached the store (they are flushed every 5 s, and at once when a node
	// sees that mark): its check after the settle delay must then put it back Up.
	testwait.For(t, 10*time.Second, "the leader says Up", func() bool { return e.appStatus(e.node(lead.ID), "slow") == "Up" })
	if n := e.apiCalls("slow", "DELETE", "/instances"); n != 0 {
		t.Fatalf("the app was stopped with two requests in flight through a live node")
	}

	victim.p.kill()
	killed := time.Now()
	for range 2 {
		if r := <-results; r.err == nil {
			t.Errorf("a request through the killed node got an answer: %d", r.code)
		}
	}
	// The dead node's counts expire (three flush intervals: 15 s after its last
	// flush), then the leader settles and stops the app.
	testwait.For(t, grace+25*time.Second, "the app put to sleep", func() bool { return e.apiCalls("slow", "DELETE", "/instances") == 1 })
	slept := time.Since(killed)
	t.Logf("stopped %v after the node died", slept.Round(time.Millisecond))
	if slept < 5*time.Second {
		t.Errorf("stopped %v after the node died: its in-flight counts (kept 15 s after its last flush) should have kept the app up longer", slept)
	}
	e.waitAppStatus(others(e.nodes, victim), "slow", "Down", 10*time.Second)
	if n := e.fake.Starts(e.ids["slow"]); n != 0 {
		t.Errorf("%d starts, want none", n)
	}
}

func TestCluster_JoinAndRemoveANode(t *testing.T) {
	e := newCluster(t, clusterClever(), 3, clusterApp{name: "web"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	members := func(st leader.Status) []string {
		var ids []string
		for _, m := range st.Members {
			ids = append(ids, m.ID)
		}
		return ids
	}
	initial := slices.Clone(e.nodes)
	followers := others(initial, e.node(lead.ID))

	// n4 lists the members but not itself: it must not bootstrap, only wait.
	n4 := e.newNode("n4")
	e.start(n4, initial)
	if st, err := e.status(n4); err != nil || st.LeaderID != "" || st.State == leader.StateLeader {
		t.Fatalf("n4 before it is added: %+v %v; want no leader known", st, err)
	}

	// Asked through a follower, which forwards to the leader.
	out, err := reaperCLI(t, "cluster", "join", "--config", followers[0].p.config,
		"--id", "n4", "--raft-addr", n4.raftAddr, "--api-addr", n4.apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "n4") {
		t.Errorf("reaper cluster join output does not list n4:\n%s", out)
	}
	all := append(slices.Clone(initial), n4)
	st := e.waitLeader(all, 15*time.Second, "")
	if st.ID != lead.ID {
		t.Errorf("the leader changed from %s to %s when n4 joined", lead.ID, st.ID)
	}
	// n4 knows the leader from its first AppendEntries, which it may refuse (its
	// log is empty) before the leader sends the entries that list the members.
	testwait.For(t, 10*time.Second, "every node to list n1..n4", func() bool {
		for _, n := range all {
			st, err := e.status(n)
			if err != nil || !slices.Equal(members(st), []string{"n1", "n2", "n3", "n4"}) {
				return false
			}
		}
		return true
	})
	for _, n := range all {
		st, err := e.status(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := members(st); !slices.Equal(got, []string{"n1", "n2", "n3", "n4"}) {
			t.Errorf("%s lists members %v after the join, want n1..n4", n.id, got)
		}
		for _, m := range st.Members {
			if m.ID == "n4" && (m.RaftAddr != n4.raftAddr || m.APIAddr != n4.apiAddr || !m.Voter) {
				t.Errorf("%s shows n4 as %+v", n.id, m)
			}
		}
	}

	out, err = reaperCLI(t, "cluster", "remove", "--config", followers[1].p.config, "--id", "n4")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "n4") {
		t.Errorf("reaper cluster remove output still lists n4:\n%s", out)
	}
	testwait.For(t, 10*time.Second, "n4 gone from every member's view", func() bool {
		for _, n := range initial {
			st, err := e.status(n)
			if err != nil || !slices.Equal(members(st), []string{"n1", "n2", "n3"}) {
				return false
			}
		}
		return true
	})
	e.waitLeader(initial, 10*time.Second, "")
}

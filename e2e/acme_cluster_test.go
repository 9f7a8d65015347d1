package e2e

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/pebbletest"
)

// TestACME_ClusterSharesOneCertificate: three nodes on one redis-server, each
// with its own listeners, and pebble validating HTTP-01 on the first node's
// http_listen only. One node obtains the certificate while the others wait on
// the shared lock, then load what it stored: one order, one certificate,
// served by all. Then a host that only n2 routes (after a reload): n2 obtains
// it, and n1 answers the challenge from the shared store.
func TestACME_ClusterSharesOneCertificate(t *testing.T) {
	httpAddrs := map[string]string{"n1": freeport.Addr(t), "n2": freeport.Addr(t), "n3": freeport.Addr(t)}
	pb := pebbletest.Start(t, pebbletest.Options{HTTPPort: portOf(t, httpAddrs["n1"])})
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app:"+r.Host) })
	e := newClusterNodeExtra(t, clusterClever(), 3, nil, "", func(id string) string {
		return acmeNodeYAML(pb, httpAddrs[id], "      challenges: [http-01]\n")
	}, clusterApp{name: "web", handler: app})
	roots := pb.IssuerRoots(t)

	serials := map[string]string{}
	for _, n := range e.nodes {
		leaf := wantServed(t, n.p.gateway, "web.test", roots)
		serials[n.id] = leaf.SerialNumber.String()
	}
	if serials["n1"] == "" || serials["n1"] != serials["n2"] || serials["n1"] != serials["n3"] {
		t.Errorf("the nodes serve different certificates (serials %v), want one", serials)
	}
	if n := pb.Orders(); n != 1 {
		t.Errorf("pebble took %d orders, want 1 for the whole cluster", n)
	}
	obtained := 0
	for _, n := range e.nodes {
		for _, l := range n.p.logs() {
			if l["msg"] == "certificate obtained" && l["domain"] == "web.test" {
				obtained++
				t.Logf("%s obtained the certificate (pebble validated on n1)", n.id)
			}
		}
	}
	if obtained != 1 {
		t.Errorf("%d nodes logged that they obtained the certificate, want 1", obtained)
	}
	addedHostOnN2ThenEverywhere(t, e, pb)
	for _, n := range e.nodes {
		for _, l := range n.p.logs() {
			if l["msg"] == "certificate not obtained: certmagic tries again later" {
				t.Errorf("%s: %v", n.id, l)
			}
		}
	}
}

// addedHostOnN2ThenEverywhere reloads n2 with a route for web2.test: n2
// obtains its certificate, with the challenge answered by n1, which has no
// such route. Then n1 and n3 reload too and serve the same certificate.
func addedHostOnN2ThenEverywhere(t *testing.T, e *clusterEnv, pb *pebbletest.Server) {
	t.Helper()
	backend := appBackend(t)
	reload := func(n *clusterNode) {
		writeConfig(t, n.dir, e.config(n, e.nodes)+route("web2", "web2.test", backend.URL))
		n.p.signal(syscall.SIGHUP)
		n.p.waitLog(func(l map[string]any) bool { return l["msg"] == "configuration reloaded" }, 10*time.Second)
	}
	roots := pb.IssuerRoots(t)
	n1, n2, n3 := e.node("n1"), e.node("n2"), e.node("n3")
	reload(n2)
	first := wantServed(t, n2.p.gateway, "web2.test", roots)
	n2.p.waitLog(func(l map[string]any) bool { return l["msg"] == "certificate obtained" && l["domain"] == "web2.test" }, 5*time.Second)
	if !strings.Contains(pb.Log(), "Attempting to validate w/ HTTP: http://web2.test:"+strconv.Itoa(portOf(t, httpListenOf(t, n1)))) {
		t.Errorf("pebble did not validate web2.test on n1's http_listen:\n%s", pb.Log())
	}
	for _, n := range []*clusterNode{n1, n3} {
		reload(n)
		if leaf := wantServed(t, n.p.gateway, "web2.test", roots); leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
			t.Errorf("%s serves web2.test with serial %v, n2 with %v: want one certificate", n.id, leaf.SerialNumber, first.SerialNumber)
		}
	}
	if n := pb.Orders(); n != 2 {
		t.Errorf("pebble took %d orders, want 2 (web.test, web2.test)", n)
	}
}

// httpListenOf is the address of the node's http_listen, from its log.
func httpListenOf(t *testing.T, n *clusterNode) string {
	t.Helper()
	l := n.p.waitLog(func(l map[string]any) bool { return l["msg"] == "acme http listening" }, time.Second)
	return l["addr"].(string)
}

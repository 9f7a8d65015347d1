package config

import (
	"crypto/x509"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/certtest"
)

// clusterFile is a valid cluster configuration of node n1, whose addresses are raft and api, with tls as
// its cluster.tls (a YAML flow mapping) and extra peers after n1's entry.
func clusterFile(raft, api, tls string) string {
	return fmt.Sprintf(`
node: {id: n1, admin_listen: %q}
store: {driver: valkey, address: "127.0.0.1:6379"}
paas: {driver: clevercloud, clevercloud: {token: t0ken}}
cluster:
  raft_listen: %q
  secret: 0123456789abcdef-secret
  peers: [{id: n1, raft_addr: %q, api_addr: %q}, {id: n2, raft_addr: "127.0.0.2:7000", api_addr: "127.0.0.2:9090"}]
  tls: %s
`, api, raft, raft, api, tls)
}

func TestParse_ClusterTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	caFile := certtest.Write(t, dir, "ca.crt", ca.PEM)
	file := func(name string) string { return filepath.Join(dir, name) }
	n1 := ca.Issue(t, "n1", certtest.Options{IPs: []string{"127.0.0.1"}, DNS: []string{"n1.cluster.test"}})
	n1Cert, n1Key := n1.Files(t, dir, "n1")
	_, n2Key := ca.Issue(t, "n2", certtest.Options{}).Files(t, dir, "n2")
	strangerCert, strangerKey := other.Issue(t, "n1", certtest.Options{}).Files(t, dir, "stranger")
	old := certtest.Options{NotBefore: time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)}
	oldCert, oldKey := ca.Issue(t, "n1", old).Files(t, dir, "old")
	serverOnly := certtest.Options{Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	serverCert, serverKey := ca.Issue(t, "n1", serverOnly).Files(t, dir, "server")
	notPEM := certtest.Write(t, dir, "notes.txt", []byte("not a certificate\n"))
	tlsOf := func(cert, key, ca string) string { return fmt.Sprintf("{cert: %q, key: %q, ca: %q}", cert, key, ca) }
	q := func(path string) string { return `"` + path + `"` }
	local := func(tls string) string { return clusterFile("127.0.0.1:7001", "127.0.0.1:9091", tls) }

	if got := problems(t, local(tlsOf(n1Cert, n1Key, caFile))); got != nil {
		t.Fatalf("a valid cluster.tls: %v", got)
	}
	cfg, _ := Parse([]byte(local(tlsOf(n1Cert, n1Key, caFile))), env(nil))
	if tls := cfg.Cluster.TLS; tls == nil || tls.Cert != n1Cert || tls.Key != n1Key || tls.CA != caFile {
		t.Fatalf("cluster.tls read as %+v", cfg.Cluster.TLS)
	}
	// A certificate naming a host by DNS, dialled by that name.
	if got := problems(t, clusterFile("n1.cluster.test:7001", "n1.cluster.test:9091", tlsOf(n1Cert, n1Key, caFile))); got != nil {
		t.Errorf("a certificate with the DNS name the peers dial: %v", got)
	}

	cases := []struct {
		name, src string
		want      []string
	}{
		{"every file missing", local("{}"), []string{
			`cluster.tls.cert: is required with tls`,
			`cluster.tls.key: is required with tls`,
			`cluster.tls.ca: is required with tls`,
		}},
		{"no such files", local(tlsOf(file("nope.crt"), file("nope.key"), file("nope-ca.crt"))), []string{
			`cluster.tls.cert: ` + q(file("nope.crt")) + ` cannot be read: no such file or directory`,
			`cluster.tls.key: ` + q(file("nope.key")) + ` cannot be read: no such file or directory`,
			`cluster.tls.ca: ` + q(file("nope-ca.crt")) + ` cannot be read: no such file or directory`,
		}},
		{"files without PEM of their kind", local(tlsOf(notPEM, n1Cert, n1Key)), []string{
			`cluster.tls.cert: ` + q(notPEM) + ` holds no PEM certificate`,
			`cluster.tls.key: ` + q(n1Cert) + ` holds no PEM private key`,
			`cluster.tls.ca: ` + q(n1Key) + ` holds no PEM certificate`,
		}},
		{"a key of another certificate", local(tlsOf(n1Cert, n2Key, caFile)), []string{
			`cluster.tls.key: ` + q(n2Key) + ` is not the private key of the certificate in ` + q(n1Cert),
		}},
		{"a certificate of another CA", local(tlsOf(strangerCert, strangerKey, caFile)), []string{
			`cluster.tls.cert: ` + q(strangerCert) + ` is not signed by a CA of ` + q(caFile),
		}},
		{"an expired certificate", local(tlsOf(oldCert, oldKey, caFile)), []string{
			`cluster.tls.cert: ` + q(oldCert) + ` expired on 2020-01-02T00:00:00Z`,
		}},
		{"a certificate for servers only", local(tlsOf(serverCert, serverKey, caFile)), []string{
			`cluster.tls.cert: ` + q(serverCert) + ` is not allowed for TLS client authentication: every node's certificate serves both ways (give it extendedKeyUsage serverAuth and clientAuth, or none)`,
		}},
		{"a certificate without the hosts the peers dial", clusterFile("10.0.0.11:7000", "n1.example.org:9090", tlsOf(n1Cert, n1Key, caFile)), []string{
			`cluster.tls.cert: does not name 10.0.0.11, the host of cluster.peers[0].raft_addr, which the other nodes dial (it names n1.cluster.test, 127.0.0.1)`,
			`cluster.tls.cert: does not name n1.example.org, the host of cluster.peers[0].api_addr, which the other nodes dial (it names n1.cluster.test, 127.0.0.1)`,
		}},
		{"a joining node: its advertise and admin_listen", strings.Replace(
			clusterFile("0.0.0.0:7000", "10.0.0.11:9090", tlsOf(n1Cert, n1Key, caFile)+"\n  advertise: 10.0.0.12:7000"),
			"{id: n1, raft_addr: \"0.0.0.0:7000\", api_addr: \"10.0.0.11:9090\"}, ", "", 1), []string{
			`cluster.tls.cert: does not name 10.0.0.12, the host of cluster.advertise, which the other nodes dial (it names n1.cluster.test, 127.0.0.1)`,
			`cluster.tls.cert: does not name 10.0.0.11, the host of node.admin_listen, which the other nodes dial (it names n1.cluster.test, 127.0.0.1)`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, tc.src)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

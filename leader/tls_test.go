package leader

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/reapergw/reaper/internal/certtest"
	"github.com/reapergw/reaper/internal/testwait"
)

// tlsFrom is a TLS whose certificate ca signs with o, trusting trust: built without LoadTLS's checks, so
// that a test can hand a node the certificate LoadTLS would refuse (expired, from another CA).
func tlsFrom(t *testing.T, ca *certtest.CA, o certtest.Options, trust *certtest.CA) *TLS {
	t.Helper()
	return &TLS{cert: ca.Issue(t, "node", o).TLS(t), cas: trust.Pool()}
}

func TestLoadTLS_ReadsAPairAndItsCA(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, "cluster CA")
	pair := ca.Issue(t, "n1", certtest.Options{IPs: []string{"10.0.0.11", "127.0.0.1"}, DNS: []string{"n1.cluster.test"}})
	certFile, keyFile := pair.Files(t, dir, "n1")
	// The bundle may hold several CAs (while one replaces another): a certificate of either is trusted.
	other := certtest.NewCA(t, "next CA")
	caFile := certtest.Write(t, dir, "ca.crt", append(slices.Clone(other.PEM), ca.PEM...))

	got, err := LoadTLS(certFile, keyFile, caFile)
	if err != nil {
		t.Fatal(err)
	}
	if names := got.Names(); !slices.Equal(names, []string{"n1.cluster.test", "10.0.0.11", "127.0.0.1"}) {
		t.Errorf("Names = %v", names)
	}
	for host, want := range map[string]bool{"10.0.0.11": true, "127.0.0.1": true, "n1.cluster.test": true, "10.0.0.12": false, "n2.cluster.test": false} {
		if got.Covers(host) != want {
			t.Errorf("Covers(%s) = %v, want %v", host, !want, want)
		}
	}
	if !got.NotAfter().Equal(pair.Leaf.NotAfter) {
		t.Errorf("NotAfter = %v, want %v", got.NotAfter(), pair.Leaf.NotAfter)
	}
	if _, err := LoadCAs(filepath.Join(dir, "missing.crt")); err == nil || err.Error() != `"`+filepath.Join(dir, "missing.crt")+`" cannot be read: no such file or directory` {
		t.Errorf("LoadCAs of a missing file = %v", err)
	}
}

// dialStreams starts a listening stream a and a stream b that dials it, each with its own TLS, and returns
// them, a's log once b's dial is done (with its refusal, when the dial failed) and b's dial error.
func dialStreams(t *testing.T, aTLS, bTLS *TLS) (a, b *authStream, aLogs string, dialErr error) {
	t.Helper()
	a, logs := newTLSStream(t, testSecret, "a", time.Second, aTLS)
	b, _ = newTLSStream(t, testSecret, "b", time.Second, bTLS)
	conn, err := b.Dial(raft.ServerAddress(a.Addr().String()), time.Second)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close() })
		return a, b, logs.String(), nil
	}
	testwait.For(t, 5*time.Second, "the refusal to be logged", func() bool { return logs.Lines("refused raft connection") == 1 })
	if n := len(a.accepted); n != 0 {
		t.Errorf("%d refused connections queued for Raft", n)
	}
	return a, b, logs.String(), err
}

func TestAuthStream_TLSCarriesTheHandshakeAndRaft(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	a, _, _, err := dialStreams(t, tlsFrom(t, ca, certtest.Options{}, ca), tlsFrom(t, ca, certtest.Options{}, ca))
	if err != nil {
		t.Fatalf("dial between two nodes of one CA: %v", err)
	}
	in := acceptOne(a, 5*time.Second)
	if in == nil {
		t.Fatal("the connection was not accepted")
	}
	defer in.Close()
	tc, ok := in.(*tls.Conn)
	if !ok {
		t.Fatalf("Raft got a %T, want a *tls.Conn", in)
	}
	st := tc.ConnectionState()
	if st.Version != tls.VersionTLS13 || len(st.VerifiedChains) == 0 || st.PeerCertificates[0].Subject.CommonName != "node" {
		t.Errorf("TLS state: version %x, %d verified chains; want TLS 1.3 and the dialer's certificate verified", st.Version, len(st.VerifiedChains))
	}
}

func TestAuthStream_TLSRefusesACertificateOfAnotherCA(t *testing.T) {
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	// The stranger knows the secret and trusts the cluster's CA: only its certificate is wrong.
	_, _, logs, err := dialStreams(t, tlsFrom(t, ca, certtest.Options{}, ca), tlsFrom(t, other, certtest.Options{}, ca))
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "the peer refused this node's certificate") {
		t.Errorf("the stranger's dial = %v, want ErrHandshake saying the peer refused its certificate", err)
	}
	if !strings.Contains(logs, "certificate signed by unknown authority") || !strings.Contains(logs, "not signed by a CA of cluster.tls.ca") {
		t.Errorf("the listener's refusal does not say why:\n%s", logs)
	}

	// The other way round: the cluster's node refuses the stranger's listener before sending anything.
	_, _, _, err = dialStreams(t, tlsFrom(t, other, certtest.Options{}, other), tlsFrom(t, ca, certtest.Options{}, ca))
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("dialling the stranger = %v, want ErrHandshake for an unknown authority", err)
	}
}

func TestAuthStream_TLSNeedsTheAddressDialledInTheCertificate(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	elsewhere := tlsFrom(t, ca, certtest.Options{IPs: []string{"127.0.0.2"}, DNS: []string{"n1.cluster.test"}}, ca)
	_, _, _, err := dialStreams(t, elsewhere, tlsFrom(t, ca, certtest.Options{}, ca))
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "certificate is valid for 127.0.0.2, not 127.0.0.1 (a node's certificate must name the hosts the others dial") {
		t.Errorf("dial of 127.0.0.1 with a certificate for 127.0.0.2 = %v", err)
	}

	// A DNS name is checked against the DNS names.
	named := tlsFrom(t, ca, certtest.Options{DNS: []string{"localhost"}}, ca)
	a, _ := newTLSStream(t, testSecret, "a", time.Second, named)
	b, _ := newTLSStream(t, testSecret, "b", time.Second, tlsFrom(t, ca, certtest.Options{}, ca))
	_, port, _ := net.SplitHostPort(a.Addr().String())
	conn, err := b.Dial(raft.ServerAddress("localhost:"+port), time.Second)
	if err != nil {
		t.Fatalf("dial of localhost with a certificate for localhost: %v", err)
	}
	conn.Close()
}

func TestAuthStream_TLSRefusesAnExpiredCertificate(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	expired := certtest.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}
	_, _, logs, err := dialStreams(t, tlsFrom(t, ca, certtest.Options{}, ca), tlsFrom(t, ca, expired, ca))
	if !errors.Is(err, ErrHandshake) {
		t.Errorf("dial with an expired certificate = %v, want ErrHandshake", err)
	}
	if !strings.Contains(logs, "certificate has expired") {
		t.Errorf("the listener's refusal does not say the certificate expired:\n%s", logs)
	}
}

func TestAuthStream_TLSAndPlainNodesSayWhyTheyCannotTalk(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	_, _, logs, err := dialStreams(t, tlsFrom(t, ca, certtest.Options{}, ca), nil)
	if !errors.Is(err, ErrHandshake) || !strings.Contains(logs, "the peer does not speak TLS: is cluster.tls set on every node?") {
		t.Errorf("a plain node dialling a TLS node: %v; listener's log:\n%s", err, logs)
	}
	_, _, logs, err = dialStreams(t, nil, tlsFrom(t, ca, certtest.Options{}, ca))
	if !errors.Is(err, ErrHandshake) || !strings.Contains(logs, "a TLS handshake: is cluster.tls set on this node too?") {
		t.Errorf("a TLS node dialling a plain node: %v; listener's log:\n%s", err, logs)
	}
}

func TestAuthStream_TLSListenerSendsNoHandshakeByteBeforeTLS(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	a, logs := newTLSStream(t, testSecret, "a", time.Second, tlsFrom(t, ca, certtest.Options{}, ca))
	conn, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The dialer's opening of our handshake, in the clear.
	if _, err := conn.Write(hello(make([]byte, nonceSize), "x", nil)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, _ := io.ReadAll(conn)
	if len(reply) > 0 && reply[0] != 0x15 { // nothing, or a TLS alert record
		t.Errorf("the listener answered a plain hello with %q", reply)
	}
	testwait.For(t, 5*time.Second, "the refusal to be logged", func() bool { return logs.Lines("refused raft connection") == 1 })
}

// clusterTLS gives each of ids a certificate of ca (for 127.0.0.1), trusting ca.
func clusterTLS(t *testing.T, ca *certtest.CA, ids ...string) map[string]*TLS {
	t.Helper()
	m := map[string]*TLS{}
	for _, id := range ids {
		m[id] = tlsFrom(t, ca, certtest.Options{}, ca)
	}
	return m
}

func TestCluster_TLSElectsALeaderAndForwardsAnAsk(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	ac := newAPIClusterWith(t, 3, clusterTLS(t, ca, "n1", "n2", "n3"))
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	ctx, cancel := context.WithTimeout(context.Background(), electionBound)
	defer cancel()

	// A follower's Asker forwards over HTTPS, with its certificate and the secret's signature.
	follower := ac.nodes[ac.followers(lead)[0]]
	if err := (Asker{Node: follower.node, Local: &askRecorder{}}).Ask(ctx, "web"); err != nil {
		t.Fatalf("Asker on follower %s: %v", follower.cfg.NodeID, err)
	}
	if got := ac.asks[lead.cfg.NodeID].got(); !slices.Equal(got, []string{"web"}) {
		t.Errorf("the leader's job got %v, want [web]", got)
	}

	// Raft listens for TLS only: a node without TLS is refused, and the leader says why.
	plain, _ := newTestStream(t, testSecret, "plain", time.Second)
	if _, err := plain.Dial(raft.ServerAddress(lead.node.cfg.Advertise), time.Second); err == nil {
		t.Error("a node without TLS opened a Raft connection to the leader")
	}
	testwait.For(t, 5*time.Second, "the leader to refuse the plain node", func() bool {
		return lead.logs.Lines("refused raft connection", "the peer does not speak TLS") >= 1
	})
	for _, tn := range ac.all {
		if tn.logs.Lines("this node's cluster certificate expires soon", "left=") != 1 {
			t.Errorf("%s did not warn that its certificate expires within a day:\n%s", tn.cfg.NodeID, tn.logs)
		}
	}
}

func TestAPI_TLSInternalCallsNeedAClientCertificateOfTheCA(t *testing.T) {
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	ac := newAPIClusterWith(t, 1, clusterTLS(t, ca, "n1"))
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	base := "https://" + ac.apiAddr("n1")
	// client sends cert whatever CAs the listener names, as nodes do.
	client := func(cert *certtest.Pair) *http.Client {
		cfg := &tls.Config{RootCAs: ca.Pool()}
		if cert != nil {
			c := cert.TLS(t)
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
	}
	send := func(c *http.Client, method, url string, sign bool) (int, string, error) {
		req, _ := http.NewRequest(method, url, nil)
		if sign {
			Sign(req, nil, testSecret, "n1", time.Now())
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	member := ca.Issue(t, "n2", certtest.Options{})
	stranger := other.Issue(t, "n2", certtest.Options{})

	noCert := jsonError("internal calls need a client certificate signed by the cluster's CA (cluster.tls.ca)")
	if code, body, err := send(client(nil), "POST", base+"/internal/asks/web", true); code != 403 || body != noCert {
		t.Errorf("signed, without a client certificate: %d %q %v, want 403 %q", code, body, err, noCert)
	}
	if _, _, err := send(client(&stranger), "POST", base+"/internal/asks/web", true); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Errorf("with a certificate of another CA: %v, want the TLS handshake refused", err)
	}
	if code, _, err := send(&http.Client{Timeout: 5 * time.Second}, "POST", "http://"+ac.apiAddr("n1")+"/internal/asks/web", true); code != 400 {
		t.Errorf("over plain HTTP: %d %v, want 400", code, err)
	}
	unsigned := jsonError("internal calls must be signed with the cluster secret")
	if code, body, err := send(client(&member), "POST", base+"/internal/asks/web", false); code != 401 || body != unsigned {
		t.Errorf("with the certificate, unsigned: %d %q %v, want 401 %q", code, body, err, unsigned)
	}
	if got := ac.asks["n1"].got(); len(got) != 0 {
		t.Fatalf("refused calls reached the job: %v", got)
	}
	if code, _, err := send(client(&member), "POST", base+"/internal/asks/web", true); code != 202 {
		t.Errorf("with the certificate, signed: %d %v, want 202", code, err)
	}
	// The operator's side needs no client certificate (the admin listener puts it behind its token).
	if code, _, err := send(client(nil), "GET", base+"/api/cluster", false); code != 200 {
		t.Errorf("GET /api/cluster without a client certificate: %d %v, want 200", code, err)
	}
	if got := ac.asks[lead.cfg.NodeID].got(); !slices.Equal(got, []string{"web"}) {
		t.Errorf("the job got %v, want the one accepted ask", got)
	}
}

func TestCluster_TLSNodeWithACertificateOfAnotherCACannotTalkRaft(t *testing.T) {
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	tlsOf := clusterTLS(t, ca, "n1", "n2")
	// n3 knows the secret and trusts the cluster's CA, but its certificate comes from another CA.
	tlsOf["n3"] = tlsFrom(t, other, certtest.Options{}, ca)
	c := newClusterWith(t, []string{"127.0.0.1:19001", "127.0.0.1:19002", "127.0.0.1:19003"}, tlsOf)
	lead, term := c.waitAgreement(electionBound, "n1", "n2")

	n3 := c.nodes["n3"]
	testwait.For(t, 4*electionBound, "n3 refused both ways, and saying why", func() bool {
		if n3.node.IsLeader() {
			t.Fatal("n3 became leader")
		}
		// The members refuse n3's dials (its votes requests) …
		refusedByMembers := c.nodes["n1"].logs.Lines("refused raft connection", "certificate signed by unknown authority") +
			c.nodes["n2"].logs.Lines("refused raft connection", "certificate signed by unknown authority")
		// … and n3 logs that they refused its certificate, as the listener of their dials and as a dialer.
		refusedOnN3 := n3.logs.Lines("refused raft connection", "the peer refused this node's certificate")
		dialsOfN3 := n3.logs.Lines("unknown certificate authority", "the peer refused this node's certificate")
		return refusedByMembers >= 1 && refusedOnN3 >= 1 && dialsOfN3 >= 1
	})
	if _, _, ok := n3.node.Leader(); ok {
		t.Error("n3 found a leader")
	}
	if got, gotTerm := c.waitAgreement(electionBound, "n1", "n2"); got != lead || gotTerm != term {
		t.Errorf("leader %s term %d after n3 tried, want %s term %d", got.cfg.NodeID, gotTerm, lead.cfg.NodeID, term)
	}
}

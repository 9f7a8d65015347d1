package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/pebbletest"
)

// Automatic HTTPS against pebble, Let's Encrypt's ACME test server
// (internal/pebbletest), with the real binary: pebble resolves every name to
// 127.0.0.1 and validates on the ports of the reaper under test.

// portOf is the port of a host:port.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("no port in %q", addr)
	}
	return n
}

// acmeNodeYAML is node.tls for a reaper of pebble pb: extra goes inside acme
// (challenges, on_demand).
func acmeNodeYAML(pb *pebbletest.Server, httpListen, extra string) string {
	return fmt.Sprintf("  tls:\n    acme:\n      ca: %q\n      ca_root: %q\n      agree: true\n      http_listen: %q\n%s",
		pb.DirectoryURL, pb.CARootFile, httpListen, extra)
}

// acmeSingle is a single node with node.tls.acme; routes as gatewayConfig takes them.
func acmeSingle(gateway, tlsYAML, routes string) string {
	return fmt.Sprintf(`
node:
  id: e2e
  listen: %s
  admin_listen: 127.0.0.1:0
  admin_token: e2e-admin-token-123
  data_dir: %%DIR%%/data
  shutdown_timeout: 5s
%sroutes:
%s`, gateway, tlsYAML, routes)
}

// startACMEReaper is startReaper that logs reaper's warnings and errors when the
// test fails.
func startACMEReaper(t *testing.T, dir, yaml string) *reaperProc {
	t.Helper()
	p := startReaper(t, dir, yaml)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reaper's log (warnings and above):\n%s", warnLines(p))
		}
	})
	return p
}

// httpsGet sends GET https://<gateway>/ with SNI and Host name, trusting roots.
func httpsGet(gateway, name string, roots *x509.CertPool) (*http.Response, error) {
	c := &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: name}, ForceAttemptHTTP2: true}}
	req, _ := http.NewRequest("GET", "https://"+gateway+"/", nil)
	req.Host = name
	return c.Do(req)
}

// appBackend answers "app:<host>".
func appBackend(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app:"+r.Host) }))
	t.Cleanup(s.Close)
	return s
}

// wantServed checks that name is served over HTTPS by gateway with a
// certificate for it from pebble, and returns the certificate.
func wantServed(t *testing.T, gateway, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	resp, err := httpsGet(gateway, name, roots)
	if err != nil {
		t.Fatalf("https://%s via %s: %v", name, gateway, err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "app:") {
		t.Errorf("https://%s: %d %q, want the app's answer", name, resp.StatusCode, body)
	}
	if resp.ProtoMajor != 2 {
		t.Errorf("https://%s: %s, want HTTP/2", name, resp.Proto)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if !slices.Equal(leaf.DNSNames, []string{name}) {
		t.Errorf("the certificate of %s names %q", name, leaf.DNSNames)
	}
	return leaf
}

func TestACME_HTTP01CertificateServedAndReloadManagesNewHosts(t *testing.T) {
	gateway, httpAddr := freeport.Addr(t), freeport.Addr(t)
	pb := pebbletest.Start(t, pebbletest.Options{HTTPPort: portOf(t, httpAddr), TLSPort: portOf(t, gateway)})
	app := appBackend(t)
	dir := t.TempDir()
	tlsYAML := acmeNodeYAML(pb, httpAddr, "      challenges: [http-01]\n")
	p := startACMEReaper(t, dir, acmeSingle(gateway, tlsYAML, route("a", "a.test", app.URL)))
	roots := pb.IssuerRoots(t)

	// At once: the handshake waits for the certificate being obtained.
	wantServed(t, gateway, "a.test", roots)
	if !strings.Contains(pb.Log(), "Attempting to validate w/ HTTP: http://a.test:"+strconv.Itoa(portOf(t, httpAddr))) {
		t.Errorf("pebble did not validate a.test over HTTP-01 on the http_listen port:\n%s", pb.Log())
	}
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "certificate obtained" && l["domain"] == "a.test" }, 5*time.Second)
	if _, err := httpsGet(gateway, "nope.test", roots); err == nil {
		t.Error("a handshake for a name of no route succeeded")
	}

	// A reload adds b.test: it gets its certificate without a restart.
	writeConfig(t, dir, acmeSingle(gateway, tlsYAML, route("a", "a.test", app.URL)+route("b", "b.test", app.URL)))
	p.signal(syscall.SIGHUP)
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "configuration reloaded" }, 10*time.Second)
	wantServed(t, gateway, "b.test", roots)
	if n := pb.Orders(); n != 2 {
		t.Errorf("pebble took %d orders, want 2 (a.test, b.test)", n)
	}
	if strings.Contains(p.logText(), "PRIVATE KEY") {
		t.Error("a private key appears in reaper's log")
	}
}

func TestACME_TLSALPN01Only(t *testing.T) {
	gateway, httpAddr := freeport.Addr(t), freeport.Addr(t)
	pb := pebbletest.Start(t, pebbletest.Options{HTTPPort: portOf(t, httpAddr), TLSPort: portOf(t, gateway)})
	app := appBackend(t)
	tlsYAML := acmeNodeYAML(pb, httpAddr, "      challenges: [tls-alpn-01]\n")
	startACMEReaper(t, t.TempDir(), acmeSingle(gateway, tlsYAML, route("a", "a.test", app.URL)))
	wantServed(t, gateway, "a.test", pb.IssuerRoots(t))
	if strings.Contains(pb.Log(), "Attempting to validate w/ HTTP") {
		t.Errorf("pebble validated over HTTP-01 with only tls-alpn-01 on:\n%s", pb.Log())
	}
	if n := pb.Orders(); n != 1 {
		t.Errorf("pebble took %d orders, want 1", n)
	}
}

func TestACME_HTTPListenRedirectsToHTTPSButNeverTheChallengePath(t *testing.T) {
	gateway, httpAddr := freeport.Addr(t), freeport.Addr(t)
	// No CA answers there: the redirects do not need one.
	tlsYAML := fmt.Sprintf("  tls:\n    acme: {ca: \"https://%s/dir\", agree: true, http_listen: %q}\n", freeport.Addr(t), httpAddr)
	startACMEReaper(t, t.TempDir(), acmeSingle(gateway, tlsYAML, route("a", "a.test", "http://127.0.0.1:1")))
	noFollow := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		method, path string
		code         int
		location     string
	}{
		{"GET", "/x?y", 308, "https://a.test/x?y"},
		{"POST", "/form?a=1&b=%2F", 308, "https://a.test/form?a=1&b=%2F"},
		{"GET", "/.well-known/acme-challenge/unknown-token", 404, ""},
	} {
		req, _ := http.NewRequest(c.method, "http://"+httpAddr+c.path, nil)
		req.Host = "a.test"
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("Location") != c.location {
			t.Errorf("%s http://a.test%s: %d Location %q, want %d %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Location"), c.code, c.location)
		}
	}
}

func TestACME_OnDemandAsksBeforeIssuing(t *testing.T) {
	gateway, httpAddr := freeport.Addr(t), freeport.Addr(t)
	pb := pebbletest.Start(t, pebbletest.Options{HTTPPort: portOf(t, httpAddr), TLSPort: portOf(t, gateway)})
	app := appBackend(t)
	var mu sync.Mutex
	var asked []string
	ask := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := r.URL.Query().Get("domain")
		mu.Lock()
		asked = append(asked, d)
		mu.Unlock()
		if d != "ok.test" {
			http.Error(w, "not ours", http.StatusNotFound)
		}
	}))
	defer ask.Close()
	askedNames := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(asked) }
	tlsYAML := acmeNodeYAML(pb, httpAddr, fmt.Sprintf("      on_demand: {ask: %q}\n", ask.URL+"/ask?token=s3cret"))
	p := startACMEReaper(t, t.TempDir(), acmeSingle(gateway, tlsYAML, route("wild", `"*.test"`, app.URL)))
	roots := pb.IssuerRoots(t)

	if _, err := httpsGet(gateway, "refused.test", roots); err == nil {
		t.Error("a handshake for a name the ask endpoint refuses succeeded")
	}
	if _, err := httpsGet(gateway, "other.example", roots); err == nil {
		t.Error("a handshake for a name of no route succeeded")
	}
	if got := askedNames(); !slices.Equal(got, []string{"refused.test"}) {
		t.Errorf("the ask endpoint was asked about %q, want refused.test only (other.example matches no route)", got)
	}
	if n := pb.Orders(); n != 0 {
		t.Errorf("pebble took %d orders for refused names, want 0", n)
	}
	wantServed(t, gateway, "ok.test", roots)
	if n := pb.Orders(); n != 1 {
		t.Errorf("pebble took %d orders, want 1 (ok.test)", n)
	}
	if strings.Contains(p.logText(), "s3cret") {
		t.Error("the ask URL's token appears in reaper's log")
	}
}

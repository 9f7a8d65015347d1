package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/certtest"
)

// gatewayCert writes a certificate for 127.0.0.1 and tls.test and its key into
// dir, and returns the pool of the CA that signed it.
func gatewayCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	ca := certtest.NewCA(t, "reaper test CA")
	pair := ca.Issue(t, "reaper test", certtest.Options{IPs: []string{"127.0.0.1"}, DNS: []string{"tls.test"}})
	certFile, keyFile = pair.Files(t, dir, "gateway")
	return certFile, keyFile, ca.Pool()
}

func TestServe_TLSWithHTTP2(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("X-Forwarded-Proto"))
	}))
	defer backend.Close()
	dir := t.TempDir()
	certFile, keyFile, pool := gatewayCert(t, dir)
	cfg := strings.Replace(gatewayConfig(route("a", "tls.test", backend.URL)),
		"  shutdown_timeout: 20s\n", "  shutdown_timeout: 20s\n  tls: {cert: "+certFile+", key: "+keyFile+"}\n", 1)
	p := startReaper(t, dir, cfg)

	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: "tls.test"},
		ForceAttemptHTTP2: true,
	}}
	req, _ := http.NewRequest("GET", "https://"+p.gateway+"/", nil)
	req.Host = "tls.test"
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2", resp.Proto)
	}
	if resp.StatusCode != 200 || body != "https" {
		t.Errorf("%d %q, want 200 and X-Forwarded-Proto https at the backend", resp.StatusCode, body)
	}
}

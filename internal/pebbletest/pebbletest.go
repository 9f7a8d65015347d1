// Package pebbletest runs pebble, Let's Encrypt's ACME test server, for tests of
// automatic HTTPS: on free loopback ports, with its own HTTPS certificate from a
// test CA, its validation ports set to the ports of the reaper under test, and
// a tiny DNS server in the test's process that resolves every name to
// 127.0.0.1, so that pebble validates names such as a.test against that reaper.
//
// pebble is looked for on the PATH, then in $(go env GOBIN) and $(go env
// GOPATH)/bin; install it
// with `go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3` (`make
// pebble`). Without it, Start skips the test, or fails it when the environment
// sets REAPER_REQUIRE_PEBBLE=1 (as CI does).
//
// Only tests import it.
package pebbletest

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/reapergw/reaper/internal/certtest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// RequireEnv names the environment variable that turns a missing pebble from a
// skip into a failure.
const RequireEnv = "REAPER_REQUIRE_PEBBLE"

// Version is the pebble the tests are written for.
const Version = "v2.10.3"

// Options configures a pebble.
type Options struct {
	// HTTPPort and TLSPort are where pebble validates HTTP-01 and TLS-ALPN-01
	// challenges: reaper's node.tls.acme.http_listen and node.listen ports.
	HTTPPort, TLSPort int
	// Validity is how long the certificates pebble issues are valid; 0: its
	// default (90 days).
	Validity time.Duration
}

// Server is a running pebble, stopped in t.Cleanup.
type Server struct {
	// DirectoryURL is the ACME directory (node.tls.acme.ca).
	DirectoryURL string
	// CARootFile holds the root of pebble's own HTTPS certificate
	// (node.tls.acme.ca_root).
	CARootFile string

	mgmt   string // host:port of the management API
	client *http.Client

	mu    sync.Mutex
	lines []string
}

// Start runs pebble and its DNS server and waits until its directory answers.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := find()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("pebbletest: %v, and %s=1", err, RequireEnv)
		}
		t.Skipf("pebbletest: %v: install it with `go install github.com/letsencrypt/pebble/v2/cmd/pebble@%s` (make pebble); set %s=1 to fail instead of skipping", err, Version, RequireEnv)
	}
	dir := t.TempDir()
	ca := certtest.NewCA(t, "pebble HTTPS test CA")
	certFile, keyFile := ca.Issue(t, "pebble", certtest.Options{IPs: []string{"127.0.0.1"}, DNS: []string{"localhost"}}).Files(t, dir, "pebble")
	s := &Server{CARootFile: certtest.Write(t, dir, "pebble-https-root.pem", ca.PEM)}
	s.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	listen := freeport.Addr(t)
	s.mgmt = freeport.Addr(t)
	s.DirectoryURL = "https://" + listen + "/dir"
	conf := map[string]any{"pebble": map[string]any{
		"listenAddress": listen, "managementListenAddress": s.mgmt,
		"certificate": certFile, "privateKey": keyFile,
		"httpPort": opts.HTTPPort, "tlsPort": opts.TLSPort,
		"keyAlgorithm": "ecdsa",
	}}
	if opts.Validity > 0 {
		conf["pebble"].(map[string]any)["profiles"] = map[string]any{
			"default": map[string]any{"description": "short-lived, for renewal tests", "validityPeriod": int(opts.Validity.Seconds())},
		}
	}
	confFile := filepath.Join(dir, "pebble.json")
	b, _ := json.Marshal(conf)
	if err := os.WriteFile(confFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	dnsAddr := startDNS(t)
	cmd := exec.Command(bin, "-config", confFile, "-dnsserver", dnsAddr)
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	s.run(t, cmd)
	return s
}

// run starts cmd, follows its output, and waits for the directory to answer.
func (s *Server) run(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("pebbletest: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("pebble's log:\n%s", s.Log())
		}
	})
	ready := testwait.Until(20*time.Second, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		resp, err := s.client.Get(s.DirectoryURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	select {
	case <-exited:
		t.Fatalf("pebbletest: pebble exited at start:\n%s", s.Log())
	default:
	}
	if !ready {
		t.Fatalf("pebbletest: the directory %s does not answer after 20s:\n%s", s.DirectoryURL, s.Log())
	}
}

// find locates the pebble binary.
func find() (string, error) {
	if p, err := exec.LookPath("pebble"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err == nil {
		lines := strings.Split(string(out), "\n") // GOBIN (often empty), then GOPATH
		var dirs []string
		if b := strings.TrimSpace(lines[0]); b != "" {
			dirs = append(dirs, b)
		}
		if len(lines) > 1 {
			for _, d := range filepath.SplitList(strings.TrimSpace(lines[1])) {
				dirs = append(dirs, filepath.Join(d, "bin"))
			}
		}
		for _, dir := range dirs {
			p := filepath.Join(dir, "pebble")
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("pebble is neither on the PATH nor in $(go env GOBIN) or $(go env GOPATH)/bin")
}

// startDNS serves DNS on a free loopback port until the test ends: A 127.0.0.1
// for every name, no other record. Over TCP: pebble's resolver asks over TCP
// alone. It returns its address.
func startDNS(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: ln, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		for _, q := range req.Question {
			if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{
					Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
					A:   net.IPv4(127, 0, 0, 1),
				})
			}
		}
		w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// IssuerRoots is the pool of pebble's issuing root (its management API's
// /roots/0), which signs the certificates it issues: what a client trusts.
func (s *Server) IssuerRoots(t testing.TB) *x509.CertPool {
	t.Helper()
	resp, err := s.client.Get("https://" + s.mgmt + "/roots/0")
	if err != nil {
		t.Fatalf("pebbletest: the issuing root: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	pool := x509.NewCertPool()
	if resp.StatusCode != http.StatusOK || !pool.AppendCertsFromPEM(b) {
		t.Fatalf("pebbletest: /roots/0 answered %d:\n%s", resp.StatusCode, b)
	}
	return pool
}

// Orders counts the orders pebble has taken ("Added order" in its log): a new
// order is a request for a new certificate.
func (s *Server) Orders() int { return s.count("Added order ") }

func (s *Server) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// Log is pebble's output so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

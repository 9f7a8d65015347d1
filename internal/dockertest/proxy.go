package dockertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Allowed are the Engine API calls the docker driver may make, and the only ones a
// socket proxy in front of reaper needs to let through (docs/docker.md has the
// same list, and an nginx recipe that StartNginx runs): the version handshake,
// listing, inspecting and watching containers, reading their stats, starting,
// stopping, killing, pausing and unpausing them. Paths are matched without their
// /v1.xx prefix.
var Allowed = []struct {
	Method string
	Path   *regexp.Regexp
}{
	{"GET", regexp.MustCompile(`^/_ping$`)},
	{"HEAD", regexp.MustCompile(`^/_ping$`)},
	{"GET", regexp.MustCompile(`^/version$`)},
	{"GET", regexp.MustCompile(`^/events$`)},
	{"GET", regexp.MustCompile(`^/containers/json$`)},
	{"GET", regexp.MustCompile(`^/containers/[a-zA-Z0-9][a-zA-Z0-9_.-]*/(json|stats)$`)},
	{"POST", regexp.MustCompile(`^/containers/[a-zA-Z0-9][a-zA-Z0-9_.-]*/(start|stop|kill|pause|unpause)$`)},
}

var versionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+`)

// Proxy is an allow-list proxy in front of the engine's socket, on a unix socket of
// its own: it forwards the calls of Allowed, answers any other with a 403 and
// fails the test. It counts the calls, and can be cut off and brought back to play
// an engine that cannot be reached.
type Proxy struct {
	t      testing.TB
	path   string
	target string

	mu     sync.Mutex
	srv    *http.Server
	calls  map[string]int // "POST /containers/<id>/start" → count
	denied []string
}

// NewProxy starts a proxy in front of the engine of DOCKER_HOST (a unix socket),
// else /var/run/docker.sock; it is closed in t.Cleanup, where any denied call
// fails the test.
func NewProxy(t testing.TB) *Proxy {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		target = strings.TrimPrefix(h, "unix://")
	}
	// A short path: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "rdp")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, path: filepath.Join(dir, "docker.sock"), target: target, calls: map[string]int{}}
	p.Up()
	t.Cleanup(func() {
		p.Down()
		_ = os.RemoveAll(dir)
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, d := range p.denied {
			t.Errorf("the driver made a call outside the allow-list: %s", d)
		}
	})
	return p
}

// Host is the proxy's address, for paas.docker.host or DOCKER_HOST.
func (p *Proxy) Host() string { return "unix://" + p.path }

// Up (re)starts the proxy.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		return
	}
	_ = os.Remove(p.path)
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		p.t.Fatalf("dockertest: proxy: %v", err)
	}
	p.srv = &http.Server{Handler: p.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func(srv *http.Server) { _ = srv.Serve(ln) }(p.srv)
}

// handler forwards the allowed calls to the engine, and refuses the others.
func (p *Proxy) handler() http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker"
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p.target)
		}},
		FlushInterval: -1, // the event stream, as it comes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.allow(r) {
			http.Error(w, "dockertest: call not allowed", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// TLSHost serves the proxy on a loopback TCP port too, over TLS with conf (a
// remote engine, as dockerd --tlsverify serves one), until the test ends; it
// returns the address for paas.docker.host.
func (p *Proxy) TLSHost(conf *tls.Config) string {
	p.t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
	if err != nil {
		p.t.Fatalf("dockertest: proxy: %v", err)
	}
	srv := &http.Server{Handler: p.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	p.t.Cleanup(func() { _ = srv.Close() })
	return "tcp://" + ln.Addr().String()
}

// Down closes the proxy and every connection through it (the event streams
// included): the engine is unreachable until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (p *Proxy) allow(r *http.Request) bool {
	path := versionPrefix.ReplaceAllString(r.URL.Path, "")
	call := r.Method + " " + path
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range Allowed {
		if a.Method == r.Method && a.Path.MatchString(path) {
			p.calls[call]++
			return true
		}
	}
	p.denied = append(p.denied, call)
	return false
}

// Calls returns how many times the call ("POST /containers/<id>/start") was
// forwarded.
func (p *Proxy) Calls(method, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method+" "+path]
}

// Starts returns how many start and unpause calls the container (its full id)
// received.
func (p *Proxy) Starts(id string) int {
	return p.Calls("POST", fmt.Sprintf("/containers/%s/start", id)) + p.Calls("POST", fmt.Sprintf("/containers/%s/unpause", id))
}

package kubetest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/reapergw/reaper/internal/freeport"
)

// ReadyTimeout bounds a start, until /readyz answers 200 (about 4 s on an idle
// machine; the shared one is slower).
var ReadyTimeout = 90 * time.Second

// Server is a running control plane.
type Server struct {
	// URL is the apiserver's address, https://127.0.0.1:<port>; its certificate
	// is self-signed (clients skip verification).
	URL string
	// Dir holds the token file, keys, certificates and the processes' logs.
	Dir string

	tokens map[string]string // user → token
	procs  []*proc           // in start order; stopped in reverse
}

// proc is one process of the control plane.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	log  string
}

// Start starts etcd, then kube-apiserver (and kube-controller-manager when
// opts asks), from the binaries in bins, and returns once the apiserver is
// ready. On failure it stops what it started and says why, with the end of
// the failing process's log.
func Start(bins string, opts Options) (*Server, error) {
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, tokens: map[string]string{AdminUser: token(), ReaperUser: token()}}
	if err := s.start(bins, opts); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(bins string, opts Options) error {
	if err := s.writeFiles(); err != nil {
		return err
	}
	addrs := make([]string, 4) // apiserver, etcd client, etcd peer, controller manager
	for i := range addrs {
		a, err := freeport.Pick()
		if err != nil {
			return err
		}
		addrs[i] = a
	}
	etcdURL, peerURL := "http://"+addrs[1], "http://"+addrs[2]
	s.run(filepath.Join(bins, "etcd"), "etcd",
		"--name", "default", "--data-dir", filepath.Join(s.Dir, "etcd-data"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	host, port, _ := net.SplitHostPort(addrs[0])
	s.URL = "https://" + addrs[0]
	// --endpoint-reconciler-type none: with the loopback advertise address the
	// endpoint reconciler refuses to start ("may not be in the loopback range").
	s.run(filepath.Join(bins, "kube-apiserver"), "kube-apiserver",
		"--etcd-servers", etcdURL, "--bind-address", host, "--secure-port", port,
		"--advertise-address", host, "--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(s.Dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", filepath.Join(s.Dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(s.Dir, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--token-auth-file", filepath.Join(s.Dir, "tokens.csv"),
		"--authorization-mode", "RBAC", "--disable-admission-plugins", "ServiceAccount")
	if err := s.waitReady(); err != nil {
		return err
	}
	if !opts.ControllerManager {
		return nil
	}
	kc, err := s.writeKubeconfig("kcm.kubeconfig", AdminUser)
	if err != nil {
		return err
	}
	host, port, _ = net.SplitHostPort(addrs[3])
	s.run(filepath.Join(bins, "kube-controller-manager"), "kube-controller-manager",
		"--kubeconfig", kc, "--leader-elect=false",
		"--controllers", "deployment,replicaset,statefulset",
		"--bind-address", host, "--secure-port", port,
		"--cert-dir", filepath.Join(s.Dir, "kcm-certs"), "--authentication-skip-lookup")
	return nil
}

// writeFiles writes the token file and the service-account key pair.
func (s *Server) writeFiles() error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s,%s,uid-%s,\"system:masters\"\n", s.tokens[AdminUser], AdminUser, AdminUser)
	fmt.Fprintf(&b, "%s,%s,uid-%s\n", s.tokens[ReaperUser], ReaperUser, ReaperUser)
	if err := os.WriteFile(filepath.Join(s.Dir, "tokens.csv"), []byte(b.String()), 0o600); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(s.Dir, "sa.key"), priv, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.Dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// run starts a process of the control plane, its output in <name>.log. The
// kernel kills it if the test binary dies without stopping it.
func (s *Server) run(bin, name string, args ...string) {
	p := &proc{name: name, done: make(chan struct{}), log: filepath.Join(s.Dir, name+".log")}
	p.cmd = exec.Command(bin, args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if f, err := os.Create(p.log); err == nil {
		p.cmd.Stdout, p.cmd.Stderr = f, f
		defer f.Close()
	}
	if err := p.cmd.Start(); err != nil {
		close(p.done)
		_ = os.WriteFile(p.log, []byte(err.Error()), 0o600)
		s.procs = append(s.procs, p)
		return
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	s.procs = append(s.procs, p)
}

// waitReady polls /readyz with the admin token until it answers 200, a
// process exits, or ReadyTimeout passes.
func (s *Server) waitReady() error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(ReadyTimeout)
	for pause := 20 * time.Millisecond; ; pause = min(pause*2, 200*time.Millisecond) {
		for _, p := range s.procs {
			select {
			case <-p.done:
				return fmt.Errorf("kubetest: %s exited before the apiserver was ready:\n%s", p.name, tail(p.log))
			default:
			}
		}
		req, _ := http.NewRequest("GET", s.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+s.tokens[AdminUser])
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubetest: apiserver not ready after %v:\n%s", ReadyTimeout, tail(filepath.Join(s.Dir, "kube-apiserver.log")))
		}
		time.Sleep(pause) // the apiserver has nothing to tell us when it is ready
	}
}

// Stop stops the processes in reverse order of start: the controller manager,
// the apiserver, then etcd. The apiserver goes before etcd: stopped the other
// way round it hangs 12–15 s retrying etcd, holding its port. SIGKILL: the
// data is thrown away. Stop removes Dir and is idempotent.
func (s *Server) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
		}
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	}
	s.procs = nil
	_ = os.RemoveAll(s.Dir)
}

// Token returns the bearer token of a user of the token file (AdminUser,
// ReaperUser).
func (s *Server) Token(user string) string { return s.tokens[user] }

// Config returns a client configuration for the user, which skips the
// verification of the apiserver's self-signed certificate.
func (s *Server) Config(user string) *rest.Config {
	return &rest.Config{
		Host: s.URL, BearerToken: s.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1, // no client-side rate limit in tests
	}
}

// writeKubeconfig writes a kubeconfig file for the user in Dir.
func (s *Server) writeKubeconfig(name, user string) (string, error) {
	path := filepath.Join(s.Dir, name)
	return path, os.WriteFile(path, []byte(s.kubeconfig(user)), 0o600)
}

// kubeconfig is a kubeconfig for the user, skipping TLS verification.
func (s *Server) kubeconfig(user string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kubetest, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: kubetest, context: {cluster: kubetest, user: %s}}]
current-context: kubetest
`, s.URL, user, s.tokens[user], user)
}

// token returns a random token.
func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tail returns the end of a log file.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// WriteKubeconfig writes a kubeconfig file for the user at path, for a
// program that runs a control plane outside a test (the bench).
func (s *Server) WriteKubeconfig(path, user string) error {
	return os.WriteFile(path, []byte(s.kubeconfig(user)), 0o600)
}

package dockertest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireNginxEnv names the variable that turns a missing nginx from a skip into
// a failure.
const RequireNginxEnv = "REAPER_REQUIRE_NGINX"

// nginxWait bounds nginx's start (its socket answering) and its stop.
const nginxWait = 20 * time.Second

// Nginx is nginx running the socket-proxy recipe of docs/docker.md ("Least
// privilege") in front of the machine's engine, as a child of the test: its own
// configuration, prefix, pid file, logs and sockets under one temporary
// directory, in the foreground (daemon off). It never touches the machine's
// nginx (a service Debian may have started on install) nor needs a TCP port.
type Nginx struct {
	// Path is the proxy's unix socket.
	Path string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when nginx exits
}

// Host is the proxy's address, for paas.docker.hosts[].host.
func (n *Nginx) Host() string { return "unix://" + n.Path }

// AccessLog returns nginx's access log so far (the combined format: one line a
// request, `"METHOD URI HTTP/1.1" STATUS …`).
func (n *Nginx) AccessLog(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The two directives of the recipe that name a socket, and the only lines
// StartNginx changes.
var (
	recipeListen = regexp.MustCompile(`(?m)^(\s*listen\s+)unix:/run/docker-reaper\.sock;`)
	recipeDocker = regexp.MustCompile(`(?m)^(\s*proxy_pass\s+http://)unix:/var/run/docker\.sock;`)
)

// NginxRecipe returns the ```nginx block of docs/docker.md, as the docs give it;
// it fails the test unless there is exactly one.
func NginxRecipe(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "docker.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```nginx\n(.*?)^```$").FindAllSubmatch(doc, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/docker.md has %d ```nginx blocks, want the one recipe", len(blocks))
	}
	return string(blocks[0][1])
}

// StartNginx runs the recipe of docs/docker.md, read from the file, with its two
// socket paths replaced (the socket it listens on by one in a temporary
// directory, the engine's by DOCKER_HOST's unix socket, else
// /var/run/docker.sock) and nothing else changed, inside a minimal main
// configuration. It returns once the proxy's socket accepts connections; nginx
// is stopped (SIGTERM, waited for) in t.Cleanup. It skips the test when nginx is
// not installed (or fails it, with REAPER_REQUIRE_NGINX=1).
func StartNginx(t testing.TB) *Nginx {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/nginx") // not on a user's PATH
	}
	if err != nil {
		if os.Getenv(RequireNginxEnv) == "1" {
			t.Fatalf("dockertest: nginx is not installed, and %s=1", RequireNginxEnv)
		}
		t.Skipf("dockertest: nginx is not installed (apt-get install nginx-light); set %s=1 to fail instead of skipping", RequireNginxEnv)
	}
	// Short: the socket's path must fit in a sockaddr_un (108 bytes).
	dir, err := os.MkdirTemp("", "rng")
	if err != nil {
		t.Fatal(err)
	}
	n := &Nginx{Path: filepath.Join(dir, "docker.sock"), dir: dir}
	t.Cleanup(func() { n.cleanup(t) })
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(n.mainConfig(t, NginxRecipe(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(bin, "-p", dir+"/", "-c", conf, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	var out bytes.Buffer
	n.cmd.Stdout, n.cmd.Stderr = &out, &out
	// If the test process dies without its cleanup, nginx is told to stop.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("starting nginx: %v", err)
	}
	n.done = make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	if err := n.waitSocket(); err != nil {
		t.Fatalf("nginx: %v; it printed %q; its error log ends:\n%s", err, out.String(), n.errorLog())
	}
	return n
}

// mainConfig wraps the recipe in a main configuration whose every path is under
// the test's directory, the sockets replaced.
func (n *Nginx) mainConfig(t testing.TB, recipe string) string {
	t.Helper()
	if c := len(recipeListen.FindAllString(recipe, -1)); c != 1 {
		t.Fatalf("docs/docker.md's nginx recipe: %d lines `listen unix:/run/docker-reaper.sock;`, want 1", c)
	}
	if c := len(recipeDocker.FindAllString(recipe, -1)); c == 0 {
		t.Fatal("docs/docker.md's nginx recipe: no `proxy_pass http://unix:/var/run/docker.sock;`")
	}
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		if !strings.HasPrefix(h, "unix://") {
			t.Skipf("dockertest: DOCKER_HOST=%s is not a unix socket, which the nginx recipe proxies to", h)
		}
		target = strings.TrimPrefix(h, "unix://")
	}
	recipe = recipeListen.ReplaceAllString(recipe, "${1}unix:"+n.Path+";")
	recipe = recipeDocker.ReplaceAllString(recipe, "${1}unix:"+target+";")
	var b strings.Builder
	if os.Geteuid() == 0 {
		// nginx's workers drop to nobody, who cannot open the engine's socket.
		b.WriteString("user root;\n")
	}
	d := n.dir
	fmt.Fprintf(&b, "pid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\nhttp {\n", d, d)
	fmt.Fprintf(&b, "access_log %s/access.log;\n", d)
	for _, p := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "%s_temp_path %s/%s;\n", p, d, p)
	}
	b.WriteString(recipe)
	b.WriteString("}\n")
	return b.String()
}

// waitSocket polls, until nginxWait passes, for the proxy's socket to accept a
// connection; it gives up at once if nginx exits.
func (n *Nginx) waitSocket() error {
	deadline := time.Now().Add(nginxWait)
	for {
		if c, err := net.Dial("unix", n.Path); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-n.done:
			return fmt.Errorf("exited at once (%v)", n.cmd.ProcessState)
		case <-time.After(20 * time.Millisecond): // a poll with a deadline
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("its socket did not answer within %s", nginxWait)
		}
	}
}

func (n *Nginx) errorLog() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return string(b)
}

// cleanup stops nginx (SIGTERM: a fast shutdown; SIGKILL after nginxWait) and
// removes its directory.
func (n *Nginx) cleanup(t testing.TB) {
	if n.cmd != nil && n.cmd.Process != nil && n.done != nil {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(nginxWait):
			_ = n.cmd.Process.Kill()
			<-n.done
			t.Errorf("nginx did not exit within %s of SIGTERM: killed", nginxWait)
		}
		if t.Failed() {
			t.Logf("nginx's error log:\n%s", n.errorLog())
		}
	}
	if err := os.RemoveAll(n.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removing nginx's directory: %v", err)
	}
}

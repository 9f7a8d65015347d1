package e2e

import (
	"bytes"
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

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/freeport"
)

// Real proxies in front of reaper's forward-auth listener, each a child of the
// test with a configuration, prefix and logs of its own under a temporary
// directory, on a free loopback port.

// docBlock returns the one ```lang block of docs/integrations.md.
func docBlock(t *testing.T, lang string) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/integrations.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```"+lang+"\n(.*?)^```$").FindAllSubmatch(doc, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/integrations.md has %d ```%s blocks, want one", len(blocks), lang)
	}
	return string(blocks[0][1])
}

// recipeFor fills a recipe of docs/integrations.md in for one app: its domain,
// its address, reaper's auth_listen and the proxy's own listen address; it fails
// the test unless each placeholder is there.
func recipeFor(t *testing.T, recipe, domain, appAddr, auth, listen string) string {
	t.Helper()
	for _, r := range []struct{ old, new string }{
		{"app.example.com", domain}, {"127.0.0.1:3000", appAddr}, {"127.0.0.1:9100", auth}, {"listen 80;", "listen " + listen + ";"},
	} {
		if r.old == "listen 80;" && !strings.Contains(recipe, r.old) {
			continue // not an nginx recipe
		}
		if !strings.Contains(recipe, r.old) {
			t.Fatalf("the recipe has no %q to replace:\n%s", r.old, recipe)
		}
		recipe = strings.ReplaceAll(recipe, r.old, r.new)
	}
	return recipe
}

// startNginx runs nginx with the server blocks, listening where they say, and
// stops it at the end of the test. It skips without nginx, unless
// REAPER_REQUIRE_NGINX=1.
func startNginx(t *testing.T, listen, servers string) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/nginx")
	}
	if err != nil {
		if os.Getenv(dockertest.RequireNginxEnv) == "1" {
			t.Fatalf("nginx is not installed, and %s=1", dockertest.RequireNginxEnv)
		}
		t.Skipf("nginx is not installed (apt-get install nginx-light); set %s=1 to fail instead", dockertest.RequireNginxEnv)
	}
	d := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "pid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\nhttp {\naccess_log %s/access.log;\n", d, d, d)
	for _, p := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "%s_temp_path %s/%s;\n", p, d, p)
	}
	b.WriteString(servers)
	b.WriteString("}\n")
	conf := filepath.Join(d, "nginx.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", d+"/", "-c", conf, "-e", filepath.Join(d, "error.log"), "-g", "daemon off;")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(d, "error.log"))
			t.Logf("nginx printed %q; its error log:\n%s", out.String(), log)
		}
	})
	waitListening(t, "nginx", listen, done)
}

// waitListening polls, for 20 s at most, until addr accepts a connection; it
// fails at once when exited is closed (the proxy ended).
func waitListening(t *testing.T, what, addr string, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited at once", what)
		case <-time.After(20 * time.Millisecond): // a poll with a deadline
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 20s", what, addr)
		}
	}
}

// nginxFront runs docs/integrations.md's nginx recipe once per app (its domain
// <id>.test) on one port, in front of reaper's auth listener; it returns the
// proxy's address.
func nginxFront(t *testing.T, auth string, apps ...app) string {
	t.Helper()
	listen := freeport.Addr(t)
	recipe := docBlock(t, "nginx")
	var servers strings.Builder
	for _, a := range apps {
		servers.WriteString(recipeFor(t, recipe, a.id+".test", a.addr, auth, listen))
	}
	startNginx(t, listen, servers.String())
	return listen
}

// caddyVersion is the Caddy the tests run: the Makefile's CADDY_VERSION, which
// `make caddy` installs into caddyPath.
const caddyVersion = "v2.11.9"

// requireCaddyEnv names the variable that turns a missing Caddy from a skip
// into a failure.
const requireCaddyEnv = "REAPER_REQUIRE_CADDY"

// caddyPath is where `make caddy` puts the binary: the user's cache folder.
func caddyPath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "reaper", "caddy-"+caddyVersion, "caddy")
}

// startCaddy runs Caddy on the Caddyfile (its sites on listen), with its data
// and configuration folders under a temporary directory, and stops it at the
// end of the test. It skips without `make caddy`'s binary, unless
// REAPER_REQUIRE_CADDY=1.
func startCaddy(t *testing.T, listen, caddyfile string) {
	t.Helper()
	bin := caddyPath()
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv(requireCaddyEnv) == "1" {
			t.Fatalf("Caddy %s is not at %s (make caddy), and %s=1", caddyVersion, bin, requireCaddyEnv)
		}
		t.Skipf("Caddy %s is not at %s: run make caddy; set %s=1 to fail instead", caddyVersion, bin, requireCaddyEnv)
	}
	d := t.TempDir()
	global := "{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n\tstorage file_system " + filepath.Join(d, "data") + "\n}\n"
	path := filepath.Join(d, "Caddyfile")
	if err := os.WriteFile(path, []byte(global+caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+d, "XDG_DATA_HOME="+d, "XDG_CONFIG_HOME="+d)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("caddy printed:\n%s", out.String())
		}
	})
	waitListening(t, "caddy", listen, done)
}

// caddyFront runs docs/integrations.md's Caddyfile once per app (its domain
// <id>.test) on one port, in front of reaper's auth listener; it returns the
// proxy's address.
func caddyFront(t *testing.T, auth string, apps ...app) string {
	t.Helper()
	listen := freeport.Addr(t)
	_, port, _ := net.SplitHostPort(listen)
	recipe := docBlock(t, "caddyfile")
	var sites strings.Builder
	for _, a := range apps {
		sites.WriteString(recipeFor(t, recipe, "http://"+a.id+".test:"+port, a.addr, auth, listen))
	}
	startCaddy(t, listen, sites.String())
	return listen
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/reapergw/reaper/bench/load"
	"github.com/reapergw/reaper/bench/procfs"
	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part J: forward-auth through Caddy (issue 24, item 5). One reaper (process
// driver, the demo app behind a reaper route) with node.auth_listen, and one
// Caddy serving two sites on one port: alone.test, reverse_proxy straight to the
// app, and auth.test, docs/integrations.md's Caddyfile recipe (reverse_proxy to
// reaper's /auth, then to the app). The load generator sends the same requests
// to both, rounds alternating; reaper's CPU per auth call is its CPU time over
// the auth window, less what it spends idle (read over the alone window, when
// no auth call comes), per request. Skipped without `make caddy`'s Caddy.

// caddyVersion is `make caddy`'s, where it installs it (the e2e tests' too).
const caddyVersion = "v2.11.9"

var errNoCaddy = errors.New("no Caddy " + caddyVersion + " (make caddy)")

// Contestant keys of part J: Caddy alone; Caddy asking the floor of an auth
// server (bareproxy --allow: net/http answering an empty 200, nothing else);
// Caddy asking reaper.
const (
	kCaddy      = "caddy"
	kCaddyFloor = "caddy+floor"
	kCaddyAuth  = "caddy+auth"
	kCaddyNginx = "caddy+nginx" // when nginx is installed (authnginx.go)
)

var authKeys = []string{kCaddy, kCaddyFloor, kCaddyAuth}

var authNames = map[string]string{
	kCaddy:      "Caddy alone",
	kCaddyFloor: "Caddy + bare Go auth",
	kCaddyAuth:  "Caddy + reaper's auth",
	kCaddyNginx: "Caddy + nginx auth",
}

// authHosts are the sites of part J's Caddy, by contestant.
var authHosts = map[string]string{kCaddy: "alone.test", kCaddyFloor: "floor.test", kCaddyAuth: "auth.test", kCaddyNginx: "nginx.test"}

// authTarget is part J's target: reaper's CPU per auth call for an awake app.
const authTarget = 30 * time.Microsecond

// caddyBin returns `make caddy`'s binary, or errNoCaddy.
func caddyBin() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", errNoCaddy
	}
	bin := filepath.Join(dir, "reaper", "caddy-"+caddyVersion, "caddy")
	if !clusterenv.IsFile(bin) {
		return "", errNoCaddy
	}
	return bin, nil
}

// authSetup is what part J runs against.
type authSetup struct {
	reaper   *reaperNode
	floor    *bareProxy // bareproxy --allow
	nginx    *bareProxy // nginx answering 200; nil without nginx
	caddy    *clusterenv.Process
	listen   string // Caddy's
	auth     netip.AddrPort
	app      netip.AddrPort
	wakeTime time.Duration
}

func setupAuth(ctx context.Context, e *env, bin string) (*authSetup, error) {
	appAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	authAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	e.progressf("J: starting reaper with forward-auth and the demo app")
	n, err := startReaper(ctx, e, "auth", authConfig(e.demoBin, appAddr, authAddr))
	if err != nil {
		return nil, err
	}
	s := &authSetup{reaper: n, listen: listen, auth: netip.MustParseAddrPort(authAddr), app: netip.MustParseAddrPort(appAddr)}
	c := clusterenv.NewClient(30 * time.Second)
	defer c.CloseIdleConnections()
	t0 := time.Now()
	if _, _, err := getApp(ctx, c, n.gateway, "auth.test"); err != nil {
		return nil, fmt.Errorf("waking the app: %w", err)
	}
	s.wakeTime = time.Since(t0)
	if s.floor, err = startFloor(ctx, e); err != nil {
		return nil, err
	}
	if s.nginx, err = startNginxAuth(ctx, e); err != nil {
		return nil, err
	}
	nginxAddr := ""
	if s.nginx != nil {
		nginxAddr = s.nginx.addr
	}
	if s.caddy, err = startCaddy(ctx, e, bin, listen, appAddr, authAddr, s.floor.addr, nginxAddr); err != nil {
		return nil, err
	}
	for _, k := range s.keys() {
		if _, _, err := getApp(ctx, c, listen, authHosts[k]); err != nil {
			return nil, fmt.Errorf("through Caddy (%s): %w", authHosts[k], err)
		}
	}
	return s, nil
}

// keys are the contestants this setup has: nginx's only with nginx.
func (s *authSetup) keys() []string {
	if s.nginx == nil {
		return authKeys
	}
	return append(slices.Clone(authKeys), kCaddyNginx)
}

// authConfig is part J's reaper.
func authConfig(demoBin, appAddr, authAddr string) clusterenv.Config {
	node := newNodeConfig("bench-auth")
	node.AuthListen = authAddr
	p := clusterenv.ReaperPluginConfig{AppID: "fast", GracePeriod: "1h", APIBehavior: "hold", FailTimeout: "60s"}
	return clusterenv.Config{
		Node:   node,
		PaaS:   clusterenv.PaaSConfig{Driver: "process", Apps: []clusterenv.AppConfig{demoApp(demoBin, "fast", appAddr)}},
		Routes: []clusterenv.RouteConfig{reaperRoute("auth", "auth.test", appAddr, p)},
	}
}

// caddyRecipe returns the ```caddyfile block of docs/integrations.md.
func caddyRecipe(root string) (string, error) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "integrations.md"))
	if err != nil {
		return "", err
	}
	blocks := regexp.MustCompile("(?ms)^```caddyfile\n(.*?)^```$").FindAllSubmatch(doc, -1)
	if len(blocks) != 1 {
		return "", fmt.Errorf("docs/integrations.md has %d caddyfile blocks, want one", len(blocks))
	}
	return string(blocks[0][1]), nil
}

// startFloor runs bareproxy --allow.
func startFloor(ctx context.Context, e *env) (*bareProxy, error) {
	p, err := clusterenv.StartProcess(e.clean, "bare auth", []string{e.bareBin, "--listen", "127.0.0.1:0", "--allow"}, nil,
		filepath.Join(e.tmp, "bareauth.log"))
	if err != nil {
		return nil, err
	}
	addr, err := p.WaitRegexp(ctx, bareListening, clusterenv.StartTimeout)
	if err != nil {
		return nil, err
	}
	return &bareProxy{Process: p, addr: addr}, nil
}

// siteFor fills docs/integrations.md's Caddy recipe in for one site.
func siteFor(recipe, site, appAddr, authAddr string) (string, error) {
	for _, r := range [][2]string{{"app.example.com", site}, {"127.0.0.1:3000", appAddr}, {"127.0.0.1:9100", authAddr}} {
		if !strings.Contains(recipe, r[0]) {
			return "", fmt.Errorf("docs/integrations.md's Caddyfile has no %q to replace", r[0])
		}
		recipe = strings.ReplaceAll(recipe, r[0], r[1])
	}
	return recipe, nil
}

// startCaddy runs Caddy with the three sites on listen (four with nginx's,
// when nginxAddr is not ""), logging nothing per request (no access log: the
// figure is the proxying's cost).
func startCaddy(ctx context.Context, e *env, bin, listen, appAddr, authAddr, floorAddr, nginxAddr string) (*clusterenv.Process, error) {
	recipe, err := caddyRecipe(e.root)
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(listen, ":")
	auth, err := siteFor(recipe, "http://auth.test:"+port, appAddr, authAddr)
	if err != nil {
		return nil, err
	}
	floor, err := siteFor(recipe, "http://floor.test:"+port, appAddr, floorAddr)
	if err != nil {
		return nil, err
	}
	if nginxAddr != "" {
		site, err := siteFor(recipe, "http://nginx.test:"+port, appAddr, nginxAddr)
		if err != nil {
			return nil, err
		}
		floor += site
	}
	dir := filepath.Join(e.tmp, "caddy")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	file := "{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n\tstorage file_system " + filepath.Join(dir, "data") + "\n}\n" +
		auth + floor + "http://alone.test:" + port + " {\n\treverse_proxy " + appAddr + "\n}\n"
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	p, err := clusterenv.StartProcess(e.clean, "caddy", []string{bin, "run", "--config", path, "--adapter", "caddyfile"}, env, filepath.Join(dir, "caddy.log"))
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitRegexp(ctx, regexp.MustCompile(`(serving initial configuration)`), clusterenv.StartTimeout); err != nil {
		return nil, err
	}
	return p, nil
}

// authSample is one run of part J.
type authSample struct {
	res        load.Result
	caddyCPU   time.Duration // Caddy's CPU per request
	reaperCPU  time.Duration // reaper's CPU over the window
	floorCPU   time.Duration // the bare auth server's CPU over the window
	nginxCPU   time.Duration // nginx's, when there is one
	authClosed int           // connections to the auth server asked closed in the window (TIME_WAIT)
	authConns  int           // connections to it open at its end
}

// measureAuth runs the load once against Caddy's site of contestant k, reading
// Caddy's, reaper's and the bare auth server's CPU time and the sockets of the
// auth server it asks around the window.
func measureAuth(ctx context.Context, s *authSetup, k string, spec runSpec) (authSample, error) {
	authAddr := s.auth
	switch k {
	case kCaddyFloor:
		authAddr = netip.MustParseAddrPort(s.floor.addr)
	case kCaddyNginx:
		authAddr = netip.MustParseAddrPort(s.nginx.addr)
	}
	var c0, c1, r0, r1, f0, f1, n0, n1 time.Duration
	var sock0, sock1 procfs.ServerSockets
	var cpuErr error
	read := func(pid int, into *time.Duration) {
		d, err := procfs.CPUTime(pid)
		if err != nil && cpuErr == nil {
			cpuErr = err
		}
		*into = d
	}
	res, err := load.Run(ctx, load.Options{
		Addr: s.listen, Host: authHosts[k],
		Header: [][2]string{{"Accept", "application/json"}, {"User-Agent", "reaper-bench"}},
		Conns:  spec.conns, Warmup: spec.warmup, Duration: spec.duration,
		AtStart: func() {
			read(s.caddy.PID(), &c0)
			read(s.reaper.PID(), &r0)
			read(s.floor.PID(), &f0)
			if s.nginx != nil {
				read(s.nginx.PID(), &n0)
			}
			sock0, _ = procfs.ReadServerSockets(authAddr)
		},
		AtEnd: func() {
			read(s.caddy.PID(), &c1)
			read(s.reaper.PID(), &r1)
			read(s.floor.PID(), &f1)
			if s.nginx != nil {
				read(s.nginx.PID(), &n1)
			}
			sock1, _ = procfs.ReadServerSockets(authAddr)
		},
	})
	if err != nil {
		return authSample{}, err
	}
	if !res.Clean() {
		return authSample{}, fmt.Errorf("%s at %d connections: %s", authNames[k], spec.conns, res.Problem())
	}
	if cpuErr != nil {
		return authSample{}, cpuErr
	}
	out := authSample{res: res, reaperCPU: r1 - r0, floorCPU: f1 - f0, nginxCPU: n1 - n0, authClosed: max(sock1.TimeWait-sock0.TimeWait, 0), authConns: sock1.Established}
	if res.Requests > 0 {
		out.caddyCPU = (c1 - c0) / time.Duration(res.Requests)
	}
	return out, nil
}

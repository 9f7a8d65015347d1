package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/reapergw/reaper/bench/procfs"
	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/freeport"
)

// reaperNode is a reaper started by the bench.
type reaperNode struct {
	*clusterenv.Process
	gateway  string // host:port of the gateway listener
	dataDir  string
	programs []string // those of its apps: what killApps may kill
}

// startReaper writes cfg under a directory of its own and starts reaper on it,
// logging JSON; it returns once reaper has logged "reaper started". Stopping it,
// and then killing the apps it started (those that still run a program of cfg's
// apps), is pushed onto the cleanup stack.
func startReaper(ctx context.Context, e *env, name string, cfg clusterenv.Config) (*reaperNode, error) {
	dir := filepath.Join(e.tmp, name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	path, err := clusterenv.WriteConfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	n := &reaperNode{dataDir: filepath.Join(dir, "data"), programs: cfg.Programs()}
	// Pushed first, so it runs after reaper has stopped: reaper leaves its apps
	// running on purpose.
	e.clean.Push(func() { killApps(n.dataDir, n.programs...) })
	args := []string{e.reaperBin, "serve", "--config", path, "--log-format", "json"}
	environ := os.Environ()
	if e.opts.profile != "" {
		environ = append(environ, pprofEnv)
	}
	p, err := clusterenv.StartProcess(e.clean, "reaper ("+name+")", args, environ, filepath.Join(dir, "reaper.log"))
	if err != nil {
		return nil, err
	}
	n.Process = p
	gw, err := p.WaitMsg(ctx, "gateway listening", clusterenv.StartTimeout)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitMsg(ctx, "reaper started", clusterenv.StartTimeout); err != nil {
		return nil, err
	}
	n.gateway = gw.Addr
	return n, nil
}

// shutdown stops reaper, then the apps it started.
func (n *reaperNode) shutdown() {
	n.Stop()
	killApps(n.dataDir, n.programs...)
}

// freeAddr returns a loopback address nothing listens on now (for an app whose
// address the config must name before it runs), with a port below the ephemeral
// range: the held-requests part opens 10,000 client connections and reaper as
// many to the app, and an app port inside the range could already be the local
// port of one of them when the app starts listening.
func freeAddr() (string, error) { return freeport.Pick() }

// appInfo is the part of the demo app's answer to "/" the bench reads.
type appInfo struct {
	Name        string `json:"name"`
	PID         int    `json:"pid"`
	ListeningAt string `json:"listening_at"`
}

var errStaleDemoApp = errors.New("bench: the demo app's answer has no listening_at: bin/demoapp is older than cmd/demoapp; run `make build` (or `make bench`)")

// getApp sends GET / and decodes the demo app's answer, which must be a 200.
func getApp(ctx context.Context, c *http.Client, addr, host string) (appInfo, clusterenv.Answer, error) {
	a, err := clusterenv.Get(ctx, c, addr, host, nil)
	if err != nil {
		return appInfo{}, a, err
	}
	if a.Status != http.StatusOK {
		return appInfo{}, a, fmt.Errorf("bench: GET http://%s/ (Host %s) answered %d: %.200s", addr, host, a.Status, a.Body)
	}
	var info appInfo
	if err := json.Unmarshal(a.Body, &info); err != nil || info.PID == 0 {
		return appInfo{}, a, fmt.Errorf("bench: GET http://%s/ (Host %s): not the demo app's answer: %.200s", addr, host, a.Body)
	}
	if info.ListeningAt == "" {
		return info, a, errStaleDemoApp
	}
	return info, a, nil
}

// killApps kills the apps a reaper started (and left running when it stopped, as
// it is meant to): the pids of its process driver's pid files under dataDir,
// provided the process still runs one of programs (a pid may have been reused
// since).
func killApps(dataDir string, programs ...string) {
	files, _ := filepath.Glob(filepath.Join(dataDir, "process", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec struct {
			PID  int `json:"pid"`
			PGID int `json:"pgid"`
		}
		if json.Unmarshal(b, &rec) != nil || rec.PID <= 0 {
			continue
		}
		argv, err := procfs.Cmdline(rec.PID)
		if err != nil || len(argv) == 0 || !slices.Contains(programs, argv[0]) {
			continue
		}
		target := rec.PID
		if rec.PGID > 0 {
			target = -rec.PGID // the app's whole group, as reaper stops it
		}
		_ = syscall.Kill(target, syscall.SIGKILL)
	}
}

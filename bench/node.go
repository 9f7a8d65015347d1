package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// reaperNode is a reaper started by the bench.
type reaperNode struct {
	*process
	gateway  string // host:port of the gateway listener
	dataDir  string
	programs []string // those of its apps: what killApps may kill
}

// startTimeout bounds how long reaper may take to start listening.
const startTimeout = 20 * time.Second

// startReaper writes cfg under a directory of its own and starts reaper on it,
// logging JSON; it returns once reaper has logged "reaper started". Stopping it,
// and then killing the apps it started (those that still run a program of cfg's
// apps), is pushed onto the cleanup stack.
func startReaper(ctx context.Context, e *env, name string, cfg reaperConfig) (*reaperNode, error) {
	dir := filepath.Join(e.tmp, name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	path, err := writeConfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	n := &reaperNode{dataDir: filepath.Join(dir, "data"), programs: cfg.programs()}
	// Pushed first, so it runs after reaper has stopped: reaper leaves its apps
	// running on purpose.
	e.clean.push(func() { killApps(n.dataDir, n.programs...) })
	args := []string{e.reaperBin, "serve", "--config", path, "--log-format", "json"}
	environ := os.Environ()
	if e.opts.profile != "" {
		environ = append(environ, pprofEnv)
	}
	p, err := startProcess(e.clean, "reaper ("+name+")", args, environ, filepath.Join(dir, "reaper.log"))
	if err != nil {
		return nil, err
	}
	n.process = p
	gw, err := p.waitMsg(ctx, "gateway listening", startTimeout)
	if err != nil {
		return nil, err
	}
	if _, err := p.waitMsg(ctx, "reaper started", startTimeout); err != nil {
		return nil, err
	}
	n.gateway = gw.Addr
	return n, nil
}

// shutdown stops reaper, then the apps it started.
func (n *reaperNode) shutdown() {
	n.stop()
	killApps(n.dataDir, n.programs...)
}

// freeAddr returns a loopback address nothing listens on now (for an app whose
// address the config must name before it runs), with a port below the ephemeral
// range: the held-requests part opens 10,000 client connections and reaper as
// many to the app, and an app port inside the range could already be the local
// port of one of them when the app starts listening.
func freeAddr() (string, error) { return freeport.Pick() }

// newClient returns an HTTP client for single requests (warm-ups, status polls,
// wakes): keep-alive, no proxy from the environment.
func newClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}, Timeout: timeout}
}

// answer is one HTTP answer read whole.
type answer struct {
	status     int
	header     http.Header
	body       []byte
	receivedAt time.Time // when the last byte of the body was read
}

// get sends GET / to addr with the Host header host and extra headers, and reads
// the answer whole.
func get(ctx context.Context, c *http.Client, addr, host string, header map[string]string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return answer{}, err
	}
	req.Host = host
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "reaper-bench")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := answer{status: resp.StatusCode, header: resp.Header, body: body, receivedAt: time.Now()}
	return a, err
}

// appInfo is the part of the demo app's answer to "/" the bench reads.
type appInfo struct {
	Name        string `json:"name"`
	PID         int    `json:"pid"`
	ListeningAt string `json:"listening_at"`
}

var errStaleDemoApp = errors.New("bench: the demo app's answer has no listening_at: bin/demoapp is older than cmd/demoapp; run `make build` (or `make bench`)")

// getApp sends GET / and decodes the demo app's answer, which must be a 200.
func getApp(ctx context.Context, c *http.Client, addr, host string) (appInfo, answer, error) {
	a, err := get(ctx, c, addr, host, nil)
	if err != nil {
		return appInfo{}, a, err
	}
	if a.status != http.StatusOK {
		return appInfo{}, a, fmt.Errorf("bench: GET http://%s/ (Host %s) answered %d: %.200s", addr, host, a.status, a.body)
	}
	var info appInfo
	if err := json.Unmarshal(a.body, &info); err != nil || info.PID == 0 {
		return appInfo{}, a, fmt.Errorf("bench: GET http://%s/ (Host %s): not the demo app's answer: %.200s", addr, host, a.body)
	}
	if info.ListeningAt == "" {
		return info, a, errStaleDemoApp
	}
	return info, a, nil
}

// appStatus asks reaper for the status of the app behind host (the
// CleverCloud-Reaper: status header: never traffic, never a wake).
func appStatus(ctx context.Context, c *http.Client, gateway, host string) (string, error) {
	a, err := get(ctx, c, gateway, host, map[string]string{"CleverCloud-Reaper": "status"})
	if err != nil {
		return "", err
	}
	var st struct {
		Status string `json:"status"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &st) != nil || st.Status == "" {
		return "", fmt.Errorf("bench: status request answered %d: %.200s", a.status, a.body)
	}
	return st.Status, nil
}

// waitStatus polls the app's status until it is want.
func waitStatus(ctx context.Context, c *http.Client, gateway, host, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		st, err := appStatus(ctx, c, gateway, host)
		if err != nil {
			return err
		}
		if st == want {
			return nil
		}
		last = st
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: app behind %s still %s after %s, want %s", host, last, timeout, want)
		}
		if !sleepCtx(ctx, 20*time.Millisecond) { // poll interval
			return ctx.Err()
		}
	}
}

// sleepCtx waits for d and reports whether it did (false: ctx ended first).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

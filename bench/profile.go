package main

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// Profiling, for `go run ./bench -profile FILE`: the bench builds its own reaper
// with profiling/pprof.go.txt added to cmd/reaper through `go build -overlay`
// (reaper's sources are not touched), runs every reaper with a pprof listener on
// a free loopback port, and saves CPU profiles of reaper during the first
// 64-connection run of the reaper-plugin route (FILE) and the first run of the
// plain route with the 2 ms app (FILE.slow), and a heap profile and a
// goroutine dump while 10,000 requests are held (FILE.heap, FILE.heap.txt with
// runtime.MemStats, FILE.goroutines.txt), and one over a 20 s run of its own
// of part J's forward-auth through Caddy (FILE.auth).
// Read them with `go tool pprof -top FILE`.

//go:embed profiling/pprof.go.txt
var profilingFS embed.FS

// pprofEnv is the environment variable the profiling file reads.
const pprofEnv = "REAPER_BENCH_PPROF=127.0.0.1:0"

// buildProfilingReaper builds reaper with the pprof file added and returns the
// binary's path.
func buildProfilingReaper(ctx context.Context, e *env, goTool string) (string, error) {
	src, err := profilingFS.ReadFile("profiling/pprof.go.txt")
	if err != nil {
		return "", err
	}
	file := filepath.Join(e.tmp, "zz_bench_pprof.go")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(e.root, "cmd", "reaper", "zz_bench_pprof.go"): file},
	})
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(e.tmp, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(e.tmp, "reaper-pprof")
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-overlay", overlayPath, "-o", bin, "./cmd/reaper")
	cmd.Dir = e.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the profiling reaper: %w\n%s", err, out)
	}
	e.progressf("profiling: built %s (cmd/reaper + bench/profiling/pprof.go.txt)", bin)
	return bin, nil
}

// pprofAddr waits for the profiling reaper's pprof listener.
func (n *reaperNode) pprofAddr(ctx context.Context) (string, error) {
	l, err := n.WaitMsg(ctx, "bench pprof listening", clusterenv.StartTimeout)
	return l.Addr, err
}

// fetchProfile saves http://addr/debug/pprof/<path> to file.
func fetchProfile(ctx context.Context, addr, path, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("profile %s: %d %s", path, resp.StatusCode, b)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileHook returns a hook for runRounds that takes a CPU profile of reaper,
// into file, during the first run of the contestant key.
func profileHook(ctx context.Context, e *env, n *reaperNode, spec runSpec, key, file string) (func(key string, round int) func() error, error) {
	addr, err := n.pprofAddr(ctx)
	if err != nil {
		return nil, err
	}
	return func(k string, round int) func() error {
		if k != key || round != 0 {
			return nil
		}
		done := make(chan error, 1)
		go func() {
			// The profile covers the warm-up's end and the measured window.
			if !clusterenv.SleepCtx(ctx, spec.warmup/2) {
				done <- ctx.Err()
				return
			}
			secs := max(int((spec.duration+spec.warmup/2)/time.Second), 1)
			done <- fetchProfile(ctx, addr, fmt.Sprintf("profile?seconds=%d", secs), file, time.Duration(secs+10)*time.Second)
		}()
		return func() error {
			if err := <-done; err != nil {
				return err
			}
			e.progressf("profiling: CPU profile of reaper (%s, %d connections) in %s", cmp.Or(contestantNames[key], authNames[key]), spec.conns, file)
			return nil
		}
	}, nil
}

// heldProfiles saves a heap profile and a goroutine dump of the node.
func heldProfiles(ctx context.Context, e *env, n *reaperNode) error {
	addr, err := n.pprofAddr(ctx)
	if err != nil {
		return err
	}
	if err := fetchProfile(ctx, addr, "heap", e.opts.profile+".heap", 30*time.Second); err != nil {
		return err
	}
	// The text form ends with runtime.MemStats: stacks against heap.
	if err := fetchProfile(ctx, addr, "heap?debug=1", e.opts.profile+".heap.txt", 30*time.Second); err != nil {
		return err
	}
	if err := fetchProfile(ctx, addr, "goroutine?debug=1", e.opts.profile+".goroutines.txt", 30*time.Second); err != nil {
		return err
	}
	e.progressf("profiling: heap profile, memory statistics and goroutines of reaper holding the requests in %s.heap, .heap.txt, .goroutines.txt", e.opts.profile)
	return nil
}

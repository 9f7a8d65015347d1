package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part K's Docker half: the same step for the Docker driver, printed beside the
// Kubernetes figure. A container whose image has a HEALTHCHECK and no port is
// ready, from the driver's view, once the engine reports it healthy (the
// health_status event it watches), as a Deployment is once its status says a
// replica is ready. Each round wakes the container with a held request and
// times from the end of the engine's first passing health check (its own
// record, .State.Health.Log) to the held request's answer; the answer comes
// from a demo app on the host, as in the Kubernetes half, so the proxied path
// is the same. The image is built FROM scratch from a static demo app (no
// registry). Skipped, with a note, when no Docker engine answers.

const (
	dockerHost = "docker.test"
	// dockerHealthInterval spaces the engine's health checks: the first runs
	// this long after the start. The engine keeps the last five checks, which
	// must still hold the first passing one when the bench reads them.
	dockerHealthInterval = 300 * time.Millisecond
)

// errNoDocker skips the Docker half of part K.
var errNoDocker = errors.New("no Docker engine answers (docker version)")

// runKubeDocker measures the Docker driver's figure; errNoDocker when there is
// no engine.
func runKubeDocker(ctx context.Context, e *env, rounds int) ([]time.Duration, error) {
	vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err := exec.CommandContext(vctx, "docker", "version", "--format", "{{.Server.Version}}").Run()
	cancel()
	if err != nil {
		return nil, errNoDocker
	}
	e.progressf("K: building the demo app's image (FROM scratch, with a HEALTHCHECK)")
	container, err := dockerScene(ctx, e)
	if err != nil {
		return nil, err
	}
	addr, err := startDemo(ctx, e, "docker")
	if err != nil {
		return nil, err
	}
	node, err := startReaper(ctx, e, "docker", clusterenv.Config{
		Node:   newNodeConfig("bench-docker"),
		Reaper: &clusterenv.JobConfig{JobInterval: "1s"},
		PaaS: clusterenv.PaaSConfig{Driver: "docker", Docker: &clusterenv.DockerConfig{
			Apps: []clusterenv.DockerAppConfig{{ID: "docker", Container: container}}}},
		Routes: []clusterenv.RouteConfig{reaperRoute("docker", dockerHost, addr, clusterenv.ReaperPluginConfig{
			AppID: "docker", GracePeriod: "1s", FailTimeout: "60s", APIBehavior: "hold"})},
	})
	if err != nil {
		return nil, err
	}
	defer node.shutdown()
	c := clusterenv.NewClient(60 * time.Second)
	defer c.CloseIdleConnections()
	var got []time.Duration
	for r := range rounds {
		e.progressf("K: Docker round %d/%d", r+1, rounds)
		d, err := dockerWake(ctx, c, node.gateway, container)
		if err != nil {
			return nil, fmt.Errorf("part K (Docker), round %d: %w", r+1, err)
		}
		got = append(got, d)
	}
	return got, nil
}

// dockerScene builds the image and creates the container (stopped); both are
// removed by the cleanup stack. It returns the container's name.
func dockerScene(ctx context.Context, e *env) (string, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "reaperbench-" + hex.EncodeToString(b)
	dir := filepath.Join(e.tmp, "docker-image")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, "demoapp"), "./cmd/demoapp")
	build.Dir = e.root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building a static demo app: %v: %s", err, out)
	}
	// The health check's command must be exec form (the image has no shell):
	// the demo app's --help exits 0, so the first check passes.
	df := fmt.Sprintf("FROM scratch\nCOPY demoapp /demoapp\nHEALTHCHECK --interval=%s --timeout=10s --retries=1 CMD [\"/demoapp\", \"--help\"]\nENTRYPOINT [\"/demoapp\"]\n", dockerHealthInterval)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return "", err
	}
	image := prefix + "-demoapp:bench"
	if out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", image, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build: %v: %s", err, out)
	}
	e.clean.Push(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })
	name := prefix + "-app"
	if out, err := exec.CommandContext(ctx, "docker", "create", "--name", name, image, "--listen", "0.0.0.0:8080", "--name", "docker").CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker create: %v: %s", err, out)
	}
	e.clean.Push(func() { _ = exec.Command("docker", "rm", "-f", "-v", name).Run() })
	return name, nil
}

// dockerWake sends a request to the sleeping app and returns the time from the
// end of the engine's first passing health check since the container's start
// to the held request's answer. reaper stops the container after its grace
// period (1 s), which the next round waits for.
func dockerWake(ctx context.Context, c *http.Client, gateway, container string) (time.Duration, error) {
	if err := clusterenv.WaitStatus(ctx, c, gateway, dockerHost, "Down", 60*time.Second); err != nil {
		return 0, err
	}
	_, a, err := getApp(ctx, c, gateway, dockerHost)
	if err != nil {
		return 0, err
	}
	healthy, err := healthyAt(ctx, container)
	if err != nil {
		return 0, err
	}
	d := a.ReceivedAt.Sub(healthy)
	if d <= 0 {
		return 0, fmt.Errorf("the held request was answered %s before the container was healthy", -d)
	}
	return d, nil
}

// dockerState is the part of docker inspect's .State the bench reads.
type dockerState struct {
	StartedAt time.Time
	Health    *struct {
		Log []struct {
			Start, End time.Time
			ExitCode   int
		}
	}
}

// healthyAt reads, from the engine's record, when the first passing health
// check since the container's last start ended: the moment it turned healthy.
func healthyAt(ctx context.Context, container string) (time.Time, error) {
	out, err := exec.CommandContext(ctx, "docker", "inspect", "--format", "{{json .State}}", container).Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("docker inspect: %w", err)
	}
	var s dockerState
	if err := json.Unmarshal(out, &s); err != nil {
		return time.Time{}, fmt.Errorf("docker inspect: %w: %.200s", err, out)
	}
	if s.Health == nil {
		return time.Time{}, errors.New("the container has no health record")
	}
	for _, l := range s.Health.Log {
		if l.ExitCode == 0 && !l.Start.Before(s.StartedAt) {
			return l.End, nil
		}
	}
	return time.Time{}, fmt.Errorf("no passing health check since the start at %s in the engine's record (%s)", s.StartedAt.Format(time.RFC3339Nano), strings.TrimSpace(string(out)))
}

// Package dockertest helps tests that drive a real Docker engine: it builds the
// demo app's image from local files (no registry is needed), creates containers
// under a name prefix unique to the test process and removes them in t.Cleanup,
// and runs an allow-list proxy in front of the engine's socket (proxy.go) that
// fails the test on any call the docker driver must never make. It also runs
// nginx with the socket-proxy recipe of docs/docker.md (nginx_linux.go).
//
// Tests skip when no engine answers, and fail instead when the environment sets
// REAPER_REQUIRE_DOCKER=1 (as CI does). Only tests import it.
package dockertest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv names the variable that turns a missing engine from a skip into a
// failure.
const RequireEnv = "REAPER_REQUIRE_DOCKER"

// Prefix starts the name of every container, image and network this process
// creates, so that cleanups never touch anything else.
var Prefix = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "reapertest-" + hex.EncodeToString(b)
}()

var engine struct {
	once sync.Once
	err  error
}

// Require skips the test when no Docker engine answers (or fails it, with
// REAPER_REQUIRE_DOCKER=1).
func Require(t testing.TB) {
	t.Helper()
	engine.once.Do(func() {
		out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
		if err != nil {
			engine.err = fmt.Errorf("no Docker engine answers (docker version: %v: %s)", err, strings.TrimSpace(string(out)))
		}
	})
	if engine.err == nil {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("dockertest: %v, and %s=1", engine.err, RequireEnv)
	}
	t.Skipf("dockertest: %v: start dockerd, or set %s=1 to fail instead of skipping", engine.err, RequireEnv)
}

// Docker runs the docker CLI and returns its trimmed output; it fails the test on
// an error.
func Docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := TryDocker(args...)
	if err != nil {
		t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TryDocker runs the docker CLI and returns its trimmed output, or an error with
// what it printed.
func TryDocker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("%v: %s", err, s)
	}
	return s, nil
}

var images struct {
	mu    sync.Mutex
	built map[string]string // what → image name
}

// BuildImage builds, once per process, an image FROM scratch holding the static
// binary of the Go package pkg (a path relative to the module, e.g. cmd/demoapp)
// as its entrypoint, and returns its name. RemoveImages removes it.
func BuildImage(t testing.TB, pkg string) string {
	t.Helper()
	if pkg == "cmd/reaper" {
		t.Fatal("dockertest: reaper's own image is built by BuildReaperImage, from the Dockerfile")
	}
	images.mu.Lock()
	defer images.mu.Unlock()
	if name, ok := images.built[pkg]; ok {
		return name
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Base(pkg)
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, bin), "./"+pkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	df := fmt.Sprintf("FROM scratch\nCOPY %s /%s\nENTRYPOINT [\"/%s\"]\n", bin, bin, bin)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	name := Prefix + "-" + bin + ":test"
	Docker(t, "build", "-q", "-t", name, dir)
	if images.built == nil {
		images.built = map[string]string{}
	}
	images.built[pkg] = name
	return name
}

// BuildReaperImage builds, once per process, reaper's own image the way make
// image does (scripts/image.sh and the repository's Dockerfile: FROM scratch,
// user 65532, a HEALTHCHECK), and returns its name. RemoveImages removes it.
func BuildReaperImage(t testing.TB) string {
	t.Helper()
	images.mu.Lock()
	defer images.mu.Unlock()
	if name, ok := images.built["reaper"]; ok {
		return name
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	name := Prefix + "-reaper:test"
	build := exec.Command(filepath.Join(root, "scripts", "image.sh"), name, t.TempDir())
	build.Env = append(os.Environ(), "VERSION=test")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	if images.built == nil {
		images.built = map[string]string{}
	}
	images.built["reaper"] = name
	return name
}

// RemoveImages removes the images BuildImage built; TestMain calls it after the
// tests.
func RemoveImages() {
	images.mu.Lock()
	defer images.mu.Unlock()
	for _, name := range images.built {
		_, _ = TryDocker("rmi", "-f", name)
	}
	images.built = nil
}

// Name is a container name under the process's prefix.
func Name(t testing.TB, short string) string {
	return Prefix + "-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + "-" + short
}

// Create creates a container (stopped) with docker create and the arguments
// given (options, then the image and its arguments), named Name(t, short); it is
// removed in t.Cleanup, even when the test fails. It returns the name.
func Create(t testing.TB, short string, args ...string) string {
	t.Helper()
	name := Name(t, short)
	Docker(t, append([]string{"create", "--name", name}, args...)...)
	t.Cleanup(func() { _, _ = TryDocker("rm", "-f", "-v", name) })
	return name
}

// State returns the container's status (running, exited, paused, created, …), or
// "gone" when it does not exist.
func State(t testing.TB, name string) string {
	t.Helper()
	out, err := TryDocker("inspect", "--format", "{{.State.Status}}", name)
	if err != nil {
		if strings.Contains(out, "No such") {
			return "gone"
		}
		t.Fatalf("docker inspect %s: %v", name, err)
	}
	return out
}

// StartedAt returns when the container last started.
func StartedAt(t testing.TB, name string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, Docker(t, "inspect", "--format", "{{.State.StartedAt}}", name))
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// ID returns the container's full id.
func ID(t testing.TB, name string) string {
	t.Helper()
	return Docker(t, "inspect", "--format", "{{.Id}}", name)
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(mod), nil
}

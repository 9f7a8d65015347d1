package dockertest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildRedisImage builds, once per process, an image FROM scratch holding the
// machine's own redis-server (REAPER_REDIS_SERVER, else the one on PATH) and the
// shared libraries ldd says it loads, at their paths: no registry is needed. It
// skips the test when no redis-server is installed (or fails it, with
// REAPER_REQUIRE_REDIS=1).
func BuildRedisImage(t testing.TB) string {
	t.Helper()
	images.mu.Lock()
	defer images.mu.Unlock()
	if name, ok := images.built["redis"]; ok {
		return name
	}
	bin := os.Getenv("REAPER_REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			if os.Getenv("REAPER_REQUIRE_REDIS") == "1" {
				t.Fatalf("dockertest: no redis-server to put in an image: %v", err)
			}
			t.Skipf("dockertest: no redis-server to put in an image (apt-get install redis-server): %v", err)
		}
	}
	files, err := loadedFiles(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var df strings.Builder
	df.WriteString("FROM scratch\n")
	for i, f := range files {
		b, err := os.ReadFile(f) // through symlinks: the image holds the files themselves
		if err != nil {
			t.Fatal(err)
		}
		local := fmt.Sprintf("f%d", i)
		if err := os.WriteFile(filepath.Join(dir, local), b, 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&df, "COPY %s %s\n", local, f)
	}
	fmt.Fprintf(&df, "ENTRYPOINT [%q]\n", files[0])
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	name := Prefix + "-redis:test"
	Docker(t, "build", "-q", "-t", name, dir)
	if images.built == nil {
		images.built = map[string]string{}
	}
	images.built["redis"] = name
	return name
}

// loadedFiles is bin and the libraries and loader ldd lists for it.
func loadedFiles(bin string) ([]string, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("ldd", real).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", real, err)
	}
	// The binary keeps the name it was called by: redis-server is a link to
	// redis-check-rdb, and chooses what it does from its argv[0].
	files := []string{bin}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			files = append(files, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			files = append(files, f[0]) // the loader
		}
	}
	return files, nil
}

// Network creates a network named under the prefix, with the options given
// (--internal: no way out of it), removed in t.Cleanup. It returns its name.
func Network(t testing.TB, short string, opts ...string) string {
	t.Helper()
	name := Name(t, short)
	Docker(t, append(append([]string{"network", "create"}, opts...), name)...)
	t.Cleanup(func() { _, _ = TryDocker("network", "rm", name) })
	return name
}

// Port returns the loopback address where a running container's port (8080/tcp)
// is published.
func Port(t testing.TB, name, port string) string {
	t.Helper()
	out := Docker(t, "port", name, port)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "127.0.0.1:") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("docker port %s %s: %q, no loopback address", name, port, out)
	return ""
}

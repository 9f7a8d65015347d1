package clusterenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot walks up from the working directory to the go.mod of the module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/reapergw/reaper\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run it from the reaper repository (no go.mod of github.com/reapergw/reaper above the working directory)")
		}
		dir = parent
	}
}

// GoCommand returns the go tool: $GOROOT/bin/go when GOROOT is set (as `go run`
// and make may leave it), else the one on PATH.
func GoCommand() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); IsFile(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// IsFile reports whether p is a regular file.
func IsFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Build runs `go build -trimpath -o out pkgs…` in the repository root.
func Build(ctx context.Context, root, out string, pkgs ...string) error {
	args := append([]string{"build", "-trimpath", "-o", out}, pkgs...)
	cmd := exec.CommandContext(ctx, GoCommand(), args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, b)
	}
	return nil
}

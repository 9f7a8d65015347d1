package clusterenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRepoRoot_FromAFolderOfTheRepository(t *testing.T) {
	root, err := RepoRoot() // tests run in internal/clusterenv
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "clusterenv", "build.go")); err != nil {
		t.Errorf("root %s has no internal/clusterenv/build.go: %v", root, err)
	}
	t.Chdir(t.TempDir())
	if _, err := RepoRoot(); err == nil {
		t.Error("found a repository root above an empty temporary directory")
	}
}

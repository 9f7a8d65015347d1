// Package templtest checks that a package's generated templ files are those
// its sources generate now.
package templtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// UpToDate regenerates every templ file of the package in the working
// directory (a test's: its own) into a temporary copy of its place in the
// module (the generated code names its source by that path) and compares the
// result with the committed _templ.go files. `templ generate -stdout` cannot
// serve: it prints nothing when the file on disk is already up to date.
func UpToDate(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs go tool templ")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go not in PATH: %v", err)
	}
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
	root := filepath.Dir(run(".", goBin, "env", "GOMOD"))
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, here)
	if err != nil {
		t.Fatal(err)
	}
	templBin := run(".", goBin, "tool", "-n", "templ")

	sources, err := filepath.Glob("*.templ")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no templ sources found: %v", err)
	}
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, rel), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, rel, src), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(tmp, templBin, "generate", "-path", ".")

	for _, src := range sources {
		generated := strings.TrimSuffix(src, ".templ") + "_templ.go"
		want, err := os.ReadFile(filepath.Join(tmp, rel, generated))
		if err != nil {
			t.Fatalf("templ generated no %s: %v", generated, err)
		}
		got, err := os.ReadFile(generated)
		if err != nil {
			t.Errorf("%s is missing (%v): run `make generate` and commit the result", generated, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale, it differs from what %s generates: run `make generate` and commit the result", generated, src)
		}
	}
	// A generated file whose source is gone would still be compiled.
	all, _ := filepath.Glob("*_templ.go")
	for _, g := range all {
		if _, err := os.Stat(strings.TrimSuffix(g, "_templ.go") + ".templ"); err != nil {
			t.Errorf("%s has no templ source: delete it or run `make generate`", g)
		}
	}
}

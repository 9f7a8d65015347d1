package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/freeport"
)

// runCheck runs `reaper check` on a file holding src.
func runCheck(t *testing.T, src string) (code int, stdout, stderr string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "reaper.yaml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"check", "--config", file}, func(string) (string, bool) { return "", false }, &out, &errOut)
	var c exitCode
	if err != nil && !errors.As(err, &c) {
		t.Fatalf("check: %v", err)
	}
	return int(c), out.String(), errOut.String()
}

const oneRoute = `routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:8081"]}
`

// A data_dir that serve could not create fails the check, as it would fail
// serve; one it can create passes, and check leaves nothing behind.
func TestCheck_DataDirServeCannotCreate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dataDir, want string }{
		{filepath.Join(file, "data"), `node.data_dir: "` + filepath.Join(file, "data") + `" cannot be created: "` + file + `" is a file`},
		{file, `node.data_dir: "` + file + `" is a file, not a directory`},
	} {
		code, _, stderr := runCheck(t, "node: {data_dir: "+c.dataDir+"}\n"+oneRoute)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("data_dir %s: exit %d\n%s\nwant exit 1 and %q", c.dataDir, code, stderr, c.want)
		}
	}
	fresh := filepath.Join(dir, "new", "data")
	if code, stdout, stderr := runCheck(t, "node: {data_dir: "+fresh+"}\n"+oneRoute); code != 0 || !strings.Contains(stdout, ": ok (") || stderr != "" {
		t.Errorf("a data_dir serve can create: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("check created %s: %v", filepath.Join(dir, "new"), err)
	}
}

// An empty file (or one of comments only) is valid, and check says it is empty.
func TestCheck_EmptyFileWarns(t *testing.T) {
	for _, src := range []string{"", "# to do\n\n"} {
		code, stdout, stderr := runCheck(t, src)
		if code != 0 || !strings.Contains(stdout, ": ok (0 routes") || !strings.Contains(stderr, "warning: the file is empty") {
			t.Errorf("check of %q: exit %d\n%s%s", src, code, stdout, stderr)
		}
	}
	if _, _, stderr := runCheck(t, "node: {data_dir: "+t.TempDir()+"}\n"); !strings.Contains(stderr, "warning: no routes") {
		t.Errorf("check of a file without routes: %s", stderr)
	}
}

// An unquoted *.example.com gets the line and what to do, not only the YAML
// library's words.
func TestCheck_UnquotedWildcardSaysToQuoteIt(t *testing.T) {
	code, _, stderr := runCheck(t, "routes:\n  - id: web\n    frontend: {domains: [*.example.com]}\n")
	if code != 1 || !strings.Contains(stderr, `line 3: `) || !strings.Contains(stderr, `write it in quotes, "*.example.com"`) {
		t.Errorf("check: exit %d\n%s", code, stderr)
	}
}

// With the kubernetes driver, check asks the cluster for HPAs that would undo
// a sleep; a cluster nothing answers for is a warning, and the check passes.
// (The HPAs themselves: paas/kubernetes's TestCheckHPAs, on a real apiserver.)
func TestCheck_KubernetesClusterUnreachableWarns(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	addr := freeport.Addr(t)
	src := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://" + addr + "\"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCheck(t, "node: {data_dir: "+dir+"}\npaas: {driver: kubernetes, kubernetes: {kubeconfig: "+kc+", namespaces: [shop]}}\n"+oneRoute)
	if code != 0 || !strings.Contains(stdout, ": ok (") || !strings.Contains(stdout, "warning: paas.kubernetes: the HPA check is incomplete: ") || !strings.Contains(stdout, addr) {
		t.Errorf("exit %d\n%s%s\nwant exit 0, ok, and a warning naming %s", code, stdout, stderr, addr)
	}
}

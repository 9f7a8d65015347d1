package main

import (
	"context"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProfilingFile_IsAnInitOfPackageMain checks the file added to cmd/reaper: it
// must compile there (package main) and only add an init function.
func TestProfilingFile_IsAnInitOfPackageMain(t *testing.T) {
	src, err := profilingFS.ReadFile("profiling/pprof.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "pprof.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name.Name != "main" || len(f.Decls) != 2 { // the imports and init
		t.Errorf("package %s with %d declarations", f.Name.Name, len(f.Decls))
	}
	if !strings.Contains(string(src), `os.Getenv("REAPER_BENCH_PPROF")`) || !strings.HasPrefix(pprofEnv, "REAPER_BENCH_PPROF=127.0.0.1:") {
		t.Error("the file and the bench disagree on the variable, or it is not loopback")
	}
}

func TestFetchProfile(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/heap" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("profile bytes"))
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	file := filepath.Join(t.TempDir(), "heap")
	if err := fetchProfile(context.Background(), addr, "heap", file, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "profile bytes" {
		t.Errorf("saved %q", b)
	}
	if err := fetchProfile(context.Background(), addr, "nothing", file+"2", 5*time.Second); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 gave %v", err)
	}
}

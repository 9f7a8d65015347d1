package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// `reaper health` against a real node: 0 from its URL or its configuration; 1,
// with one line that says why, from an address nobody listens on, from an
// answer other than 200, and from a listener that never answers.
func TestHealthCmd_RealNodeHealthyDeadAddressNot(t *testing.T) {
	n := startTestNode(t)
	for _, args := range [][]string{
		{"health", "--url", n.admin + "/healthz"},
		{"health", "--url", strings.TrimPrefix(n.admin, "http://")}, // no scheme, no path: http://…/healthz
		{"health", "--config", n.config, "--timeout", "5s"},
	} {
		r := runCLI(t, context.Background(), args...)
		if r.code != 0 || r.stdout != n.admin+"/healthz: ok\n" || r.stderr != "" {
			t.Errorf("%q against a live node: %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}

	dead := "http://" + freeport.Addr(t) + "/healthz"
	r := runCLI(t, context.Background(), "health", "--url", dead)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "reaper health: "+dead+": ") || !strings.Contains(r.stderr, "connection refused") ||
		strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
		t.Errorf("health against a dead address: %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// The admin API without a token: 401.
	r = runCLI(t, context.Background(), "health", "--url", n.admin+"/api/apps")
	if r.code != 1 || r.stderr != "reaper health: "+n.admin+"/api/apps: answered 401 Unauthorized, not 200\n" {
		t.Errorf("health against a 401: %d, stderr %q", r.code, r.stderr)
	}

	// A listener that accepts connections (the kernel does, from its backlog)
	// and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	begin := time.Now()
	r = runCLI(t, context.Background(), "health", "--url", "http://"+ln.Addr().String(), "--timeout", "300ms")
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("health against a silent listener took %v with --timeout 300ms", took)
	}
	if r.code != 1 || !strings.HasSuffix(r.stderr, "/healthz: no answer before the timeout (--timeout)\n") {
		t.Errorf("health against a silent listener: %d, stderr %q", r.code, r.stderr)
	}
}

// A configuration that cannot be loaded is unhealthy (1), said on one line;
// options that contradict each other are a usage error (2).
func TestHealthCmd_BadConfigurationAndOptions(t *testing.T) {
	r := runCLI(t, context.Background(), "health", "--config", t.TempDir()+"/missing.yaml")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "reaper health: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("health with a missing configuration: %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, context.Background(), "health", "--config", "x.yaml", "--url", "http://127.0.0.1:1")
	if r.code != 2 || r.stderr != "reaper health: give --url or --config, not both\n" {
		t.Errorf("health with --url and --config: %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, context.Background(), "health", "--url", "ftp://example.org/")
	if r.code != 1 || !strings.Contains(r.stderr, "is not an http:// or https:// URL") {
		t.Errorf("health with an ftp:// URL: %d, stderr %q", r.code, r.stderr)
	}
}

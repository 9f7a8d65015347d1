package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/freeport"
)

// startFailing writes a configuration with the given listeners and a TLS pair that
// exists but holds no certificate, so that startNode gets as far as loading it.
func startFailing(t *testing.T, gateway, admin string) error {
	t.Helper()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "reaper.yaml")
	yaml := fmt.Sprintf(`node:
  id: n1
  listen: %s
  admin_listen: %s
  data_dir: %s
  tls: {cert: %s, key: %s}
paas:
  driver: process
`, gateway, admin, filepath.Join(dir, "data"), bad, bad)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	n, err := startNode(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	if err == nil {
		n.shutdown()
		t.Fatal("startNode succeeded with a TLS pair that holds no certificate")
	}
	return err
}

func wantFree(t *testing.T, what, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("the %s listener on %s is still open after startNode failed: %v", what, addr, err)
		return
	}
	ln.Close()
}

func TestStartNode_FailureClosesTheListeners(t *testing.T) {
	gateway, admin := freeport.Addr(t), freeport.Addr(t)
	err := startFailing(t, gateway, admin)
	if !strings.HasPrefix(err.Error(), "node.tls: ") {
		t.Errorf("startNode = %v, want a node.tls error", err)
	}
	wantFree(t, "gateway", gateway)
	wantFree(t, "admin", admin)
}

func TestStartNode_AdminPortTakenClosesTheGateway(t *testing.T) {
	gateway, admin := freeport.Addr(t), freeport.Addr(t)
	taken, err := net.Listen("tcp", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	err = startFailing(t, gateway, admin)
	if !strings.HasPrefix(err.Error(), "node.admin_listen: ") {
		t.Errorf("startNode = %v, want a node.admin_listen error", err)
	}
	wantFree(t, "gateway", gateway)
}

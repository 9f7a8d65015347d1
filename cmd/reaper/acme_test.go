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

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/internal/freeport"
)

func TestStartNode_ACMEHTTPListenTakenClosesTheOtherListeners(t *testing.T) {
	gateway, admin, httpAddr := freeport.Addr(t), freeport.Addr(t), freeport.Addr(t)
	taken, err := net.Listen("tcp", httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "reaper.yaml")
	yaml := fmt.Sprintf(`node:
  id: n1
  listen: %s
  admin_listen: %s
  data_dir: %s
  tls: {acme: {ca: "https://127.0.0.1:1/dir", agree: true, http_listen: %q}}
paas: {driver: process}
`, gateway, admin, filepath.Join(dir, "data"), httpAddr)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	n, err := startNode(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	if err == nil {
		n.shutdown()
		t.Fatal("startNode succeeded with node.tls.acme.http_listen taken")
	}
	if !strings.HasPrefix(err.Error(), "node.tls.acme.http_listen: ") {
		t.Errorf("startNode = %v, want a node.tls.acme.http_listen error", err)
	}
	wantFree(t, "gateway", gateway)
	wantFree(t, "admin", admin)
}

func TestRouteDomains_EnabledRoutesOnly(t *testing.T) {
	cfg, err := config.Parse([]byte(`routes:
  - {id: a, frontend: {domains: [a.test, "*.w.test/api"]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: b, enabled: false, frontend: {domains: [b.test]}, backend: {targets: ["http://127.0.0.1:1"]}}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(routeDomains(cfg.Routes), ","); got != "a.test,*.w.test/api" {
		t.Errorf("routeDomains = %s, want the enabled route's domains", got)
	}
}

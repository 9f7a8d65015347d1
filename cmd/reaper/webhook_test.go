package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/webhook"
)

// A single node queues its events and delivers them itself: the first look at
// an app (WaitingForInit → Down) reaches the webhook, signed.
func TestStartNode_SingleNodeDeliversWebhooks(t *testing.T) {
	const secret = "single-node-webhook-secret"
	var mu sync.Mutex
	var got []webhook.Payload
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify([]byte(secret), r.Header.Get(webhook.HeaderSignature), body, time.Now(), time.Minute); err != nil {
			t.Errorf("signature: %v", err)
		}
		var p webhook.Payload
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}))
	defer recv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "reaper.yaml")
	yaml := fmt.Sprintf(`node: {id: n1, listen: %s, admin_listen: "", data_dir: %s}
reaper: {job_interval: 1s, fast_interval: 100ms}
paas:
  apps: [{id: hello, command: ["true"], ready: {tcp: "127.0.0.1:1"}}]
routes:
  - id: hello
    frontend: {domains: [hello.test]}
    backend: {targets: ["http://127.0.0.1:1"]}
    plugins: [{plugin: reaper, config: {app_id: hello}}]
events:
  webhooks: [{url: %q, secret: %q, events: [status]}]
`, freeport.Addr(t), filepath.Join(dir, "data"), recv.URL+"/hook", secret)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	n, err := startNode(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.shutdown()
	testwait.For(t, 10*time.Second, "the first status event at the webhook", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if p := got[0]; p.Type != "status" || p.AppID != "hello" || p.To != "Down" || p.Node != "n1" {
		t.Errorf("first event %+v, want hello's WaitingForInit → Down from n1", p)
	}
}

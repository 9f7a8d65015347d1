package main

import (
	"context"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRun_ProxiesAndReusesUpstreamConnections(t *testing.T) {
	var upstreamConns atomic.Int64
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host+" "+r.URL.Path)
	}))
	backend.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			upstreamConns.Add(1)
		}
	}
	backend.Start()
	defer backend.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var log logtest.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--target", backend.URL}, &log) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run = %v", err)
		}
	}()

	re := regexp.MustCompile(`bareproxy listening on (\S+)\n`)
	var addr string
	if !testwait.Until(5*time.Second, func() bool {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}) {
		t.Fatalf("no listening line: %q", log.String())
	}

	client := &http.Client{}
	for i := range 20 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/some/path", nil)
		req.Host = "bench.test"
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// SetURL sends the target's host, as a bare proxy does.
		if resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(body), " /some/path") {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if n := upstreamConns.Load(); n != 1 {
		t.Errorf("20 sequential requests opened %d upstream connections, want 1", n)
	}
}

func TestRun_RefusesABadTarget(t *testing.T) {
	for _, target := range []string{"", "ftp://x", "http://", "::"} {
		err := run(context.Background(), []string{"--target", target}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--target") {
			t.Errorf("target %q: err = %v", target, err)
		}
	}
}

// --allow answers every request with the forward-auth go-ahead, empty.
func TestAllowAll_TheGoAheadAndNothingElse(t *testing.T) {
	w := httptest.NewRecorder()
	allowAll{}.ServeHTTP(w, httptest.NewRequest("GET", "/auth", nil))
	if w.Code != http.StatusOK || w.Header().Get("Reaper-Access") != "allow" || w.Body.Len() != 0 {
		t.Errorf("%d %v %q", w.Code, w.Header(), w.Body)
	}
}

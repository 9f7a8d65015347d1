package plugin

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// flakyBackend reads each request on its connections; the first connection it
// accepts is broken in the chosen way, the others get a normal answer with the
// body they were sent.
type flakyBackend struct {
	ln    net.Listener
	first string // "reset": read the request, then reset; "partial": write the status line and half a header, then reset
	conns atomic.Int64
	mu    sync.Mutex
	got   []string // the bodies answered
}

func startFlakyBackend(t *testing.T, first string) *flakyBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &flakyBackend{ln: ln, first: first}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c, b.conns.Add(1) == 1)
		}
	}()
	return b
}

func (b *flakyBackend) serve(c net.Conn, broken bool) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		if broken {
			if b.first == "partial" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Partial: ")
			}
			c.(*net.TCPConn).SetLinger(0) // close with a reset
			return
		}
		b.mu.Lock()
		b.got = append(b.got, string(body))
		b.mu.Unlock()
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// A request whose body is in memory and whose connection breaks before any byte
// of the answer is sent once more, on a new connection; one whose body is not in
// memory, or whose answer had begun, is not (its backend may have acted on it).
func TestProxy_ALostConnectionIsRetriedOnceWhenTheBodyIsInMemory(t *testing.T) {
	for _, tc := range []struct {
		name       string
		first      string
		size       int // body bytes; the plugin holds up to 1024 in memory
		wantStatus int
		wantConns  int64
	}{
		{"reset before the answer, body in memory: sent again", "reset", 100, 200, 2},
		{"reset before the answer, body streamed: 502", "reset", 5000, 502, 1},
		{"reset after the answer began: 502", "partial", 100, 502, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend := startFlakyBackend(t, tc.first)
			complete := make(chan bool, 1)
			r := mustRouter(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["http://$B"]}
    plugins: [{plugin: test_buffer, config: {limit: 1024}}]
`, map[string]string{"B": backend.ln.Addr().String()}, map[string]any{"complete": complete})
			tg := newTestGateway(t, r)
			payload := strings.Repeat("x", tc.size)
			res, body := tg.do(t, "POST", "a.test", "/order", nil, strings.NewReader(payload))
			<-complete
			if res.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%.60q), want %d", res.StatusCode, body, tc.wantStatus)
			}
			if tc.wantStatus == 200 && body != payload {
				t.Errorf("the answer's body is %d bytes, want the %d sent", len(body), len(payload))
			}
			if n := backend.conns.Load(); n != tc.wantConns {
				t.Errorf("%d connections reached the backend, want %d", n, tc.wantConns)
			}
		})
	}
}

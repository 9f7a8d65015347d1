package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// pattern is an endless reader of bytes that allocates nothing.
type pattern struct{ left int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	for i := range b {
		b[i] = byte(i)
	}
	p.left -= int64(len(b))
	return len(b), nil
}

// TestProxy_StreamsLargeBodiesInBoundedMemory sends 1 GiB up and 1 GiB down
// through the gateway (256 MiB each way under the race detector); client, gateway
// and backend share this process, so if any of them buffered a body the process
// would have asked the system for that much. It checks that the memory obtained
// from the system stays under 64 MiB.
func TestProxy_StreamsLargeBodiesInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 GiB")
	}
	size := 1 << 30
	if raceEnabled {
		size = 256 << 20
	}
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			io.WriteString(w, strconv.FormatInt(n, 10))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		io.Copy(w, &pattern{left: int64(size)})
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: big, frontend: {domains: [big.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)

	res, body := gw.do(t, "POST", "big.test", "/up", nil, io.NopCloser(&pattern{left: int64(size)}))
	if res.StatusCode != 200 || body != strconv.Itoa(size) {
		t.Fatalf("upload: %d %q", res.StatusCode, body)
	}

	req, _ := http.NewRequest("GET", gw.srv.URL+"/down", nil)
	req.Host = "big.test"
	res, err := gw.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil || n != int64(size) {
		t.Fatalf("download: %d bytes, %v", n, err)
	}

	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.Sys > 64<<20 {
		t.Errorf("the process obtained %d MiB from the system moving 2 GiB: a body was buffered", m.Sys>>20)
	}
	t.Logf("memory obtained from the system: %d MiB", m.Sys>>20)
}

func TestProxy_WebSocketEcho(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo:"), msg...)); err != nil {
				return
			}
		}
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: ws, frontend: {domains: [ws.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(gw.srv.URL, "http")+"/socket", &websocket.DialOptions{
		Host:       "ws.test",
		HTTPHeader: http.Header{"X-Request-Id": {"ws-1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols || res.Header.Get("X-Request-Id") == "" {
		t.Errorf("upgrade answer %d, X-Request-Id %q", res.StatusCode, res.Header.Get("X-Request-Id"))
	}
	for i := range 3 {
		msg := fmt.Sprintf("hello %d", i)
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "echo:"+msg {
			t.Errorf("got %q", got)
		}
	}
	c.Close(websocket.StatusNormalClosure, "bye")
	line := gw.accessLine(t, "ws-1")
	if line["status"] != int64(101) || line["bytes"].(int64) <= 0 {
		t.Errorf("access line %v: want status 101 and the bytes sent after the upgrade", line)
	}
}

func TestProxy_EventStreamFlushesEachEvent(t *testing.T) {
	next := make(chan struct{}, 1)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", "45") // a length must not make the proxy buffer events
		for i := range 3 {
			<-next
			fmt.Fprintf(w, "data: event %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: sse, frontend: {domains: [sse.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	req, _ := http.NewRequest("GET", gw.srv.URL+"/events", nil)
	req.Host = "sse.test"
	next <- struct{}{}
	res, err := gw.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	for i := range 3 {
		if i > 0 {
			next <- struct{}{} // the backend writes the next event only now
		}
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("data: event %d\n", i); line != want {
			t.Fatalf("got %q, want %q", line, want)
		}
		br.ReadString('\n')
	}
}

func TestProxy_StreamWithoutLengthFlushesEachWrite(t *testing.T) {
	next := make(chan struct{}, 1)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			<-next
			fmt.Fprintf(w, "line %d\n", i)
			w.(http.Flusher).Flush()
		}
	}))
	defer b.Close()
	r := mustRouter(t, `
routes:
  - {id: s, frontend: {domains: [s.test]}, backend: {targets: ["$B"]}}
`, map[string]string{"B": b.URL}, nil)
	gw := newTestGateway(t, r)
	req, _ := http.NewRequest("GET", gw.srv.URL+"/", nil)
	req.Host = "s.test"
	next <- struct{}{}
	res, err := gw.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	for i := range 3 {
		if i > 0 {
			next <- struct{}{}
		}
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("line %d\n", i) {
			t.Fatalf("got %q, %v", line, err)
		}
	}
}

package plugin

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// bodyGateway serves one route to backend with the given body idle timeout, over
// TLS with HTTP/2 when tlsOn.
func bodyGateway(t *testing.T, backend string, idle time.Duration, tlsOn bool) (*httptest.Server, *logSink) {
	t.Helper()
	r := mustRouter(t, `
routes:
  - id: up
    frontend: {domains: [up.test]}
    backend: {targets: ["$B"]}
`, map[string]string{"B": backend}, nil)
	logs := &logSink{}
	g := NewGateway(GatewayOptions{Logger: slog.New(logs), BodyIdleTimeout: idle})
	g.Swap(r)
	srv := httptest.NewUnstartedServer(g)
	if tlsOn {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, logs
}

// countingBackend answers with the number of body bytes it read, and sends the
// error of its read, if any, on errs.
func countingBackend(t *testing.T, errs chan<- error) *httptest.Server {
	t.Helper()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			errs <- err
			return
		}
		io.WriteString(w, strconv.FormatInt(n, 10))
	}))
	t.Cleanup(b.Close)
	return b
}

// A client that sends part of its body, then nothing, is disconnected once the
// body idle timeout has passed; the backend's request ends with it, and the
// access log says 499.
func TestBodyIdle_ASilentClientIsDisconnected(t *testing.T) {
	errs := make(chan error, 1)
	b := countingBackend(t, errs)
	const idle = 200 * time.Millisecond
	gw, logs := bodyGateway(t, b.URL, idle, false)
	c, err := net.Dial("tcp", gw.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprint(c, "POST /up HTTP/1.1\r\nHost: up.test\r\nX-Request-Id: silent\r\nContent-Length: 1000\r\n\r\n0123456789")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	took := time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection of a client silent mid-body is still open after %v", took.Round(time.Millisecond))
	}
	if len(got) != 0 {
		t.Errorf("the gateway answered %q to a client that cannot be answered", got)
	}
	if took < idle || took > idle+idle/8+2*time.Second {
		t.Errorf("disconnected after %v, want after the idle timeout (%v)", took.Round(time.Millisecond), idle)
	}
	select {
	case <-errs:
	case <-time.After(5 * time.Second):
		t.Error("the backend's request did not end with the client")
	}
	waitAccess(t, logs, "silent", 499)
}

// waitAccess waits for the access line of request id (the gateway's, or the
// client's X-Request-Id) and checks its status.
func waitAccess(t *testing.T, logs *logSink, id string, status int64) {
	t.Helper()
	var line map[string]any
	if !testwait.Until(5*time.Second, func() bool {
		for _, l := range logs.find("access") {
			if l["request_id"] == id || l["client_request_id"] == id {
				line = l
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no access line for %s", id)
	}
	if line["status"] != status {
		t.Errorf("access line %v, want status %d", line, status)
	}
}

// A body sent slowly but steadily (every pause shorter than the idle timeout)
// reaches the backend whole, however long it takes in all.
func TestBodyIdle_ASteadySlowBodyGoesThrough(t *testing.T) {
	errs := make(chan error, 1)
	b := countingBackend(t, errs)
	const idle = 200 * time.Millisecond
	gw, _ := bodyGateway(t, b.URL, idle, false)
	c, err := net.Dial("tcp", gw.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 20 // 20 bytes, one every 50 ms: a second in all, five idle timeouts
	fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: up.test\r\nContent-Length: %d\r\n\r\n", n)
	tick := time.NewTicker(idle / 4)
	defer tick.Stop()
	for range n {
		<-tick.C
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatalf("the gateway closed a connection whose body kept coming: %v", err)
		}
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != strconv.Itoa(n) {
		t.Errorf("answer %d %q, want 200 and the whole body at the backend", res.StatusCode, body)
	}
}

// An HTTP/2 stream goes both ways: once the backend's answer has begun, the
// client may pause its body longer than the idle timeout.
func TestBodyIdle_AnHTTP2BodyMayPauseOnceTheAnswerBegan(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		w.WriteHeader(200)
		rc.Flush() // the answer begins before the body is read
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			fmt.Fprintf(w, "error %v", err)
			return
		}
		fmt.Fprint(w, n)
	}))
	defer b.Close()
	const idle = 100 * time.Millisecond
	gw, _ := bodyGateway(t, b.URL, idle, true)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: gw.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs},
		ForceAttemptHTTP2: true,
	}}
	defer client.CloseIdleConnections()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", gw.URL+"/up", pr)
	req.Host = "up.test"
	type result struct {
		res *http.Response
		err error
	}
	got := make(chan result, 1)
	go func() {
		res, err := client.Do(req)
		got <- result{res, err}
	}()
	pw.Write([]byte("first"))
	r := <-got // the answer began
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.res.Body.Close()
	if r.res.ProtoMajor != 2 {
		t.Fatalf("protocol %s, want HTTP/2", r.res.Proto)
	}
	<-time.After(5 * idle) // the pause under test
	pw.Write([]byte("second"))
	pw.Close()
	body, err := io.ReadAll(r.res.Body)
	if err != nil || string(body) != "11" {
		t.Errorf("answer %q %v, want the whole body (11 bytes) at the backend", body, err)
	}
}

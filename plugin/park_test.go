package plugin

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reapergw/reaper/internal/testwait"
)

func init() {
	Register(Info{ID: "test_park", New: func() Plugin { return &parkPlugin{} }})
}

// parkPlugin parks every request in its access step and hands it to the test
// through the parkLot service; when the request is resumed, the step runs again
// and lets it through.
type parkPlugin struct {
	// ResumeAtOnce resumes the request from inside the step, before the gateway
	// arms the watch.
	ResumeAtOnce bool `yaml:"resume_at_once"`
	// Gate makes the step wait for a value on the lot's gate before it parks.
	Gate bool `yaml:"gate"`
	lot  *parkLot
}

// parkLot is where the test finds parked requests and hears of clients gone.
type parkLot struct {
	gate   chan struct{}
	parked chan *Parked
	gone   chan string // the request id of a client that hung up
	log    callLog     // "park <id>", "resumed <id>", "not parked <id>"
}

func newParkLot() *parkLot {
	return &parkLot{gate: make(chan struct{}), parked: make(chan *Parked, 16), gone: make(chan string, 16)}
}

type resumedKey struct{}

func (p *parkPlugin) Provision(ctx ProvisionContext) error {
	p.lot = ctx.Services["lot"].(*parkLot)
	return nil
}

func (p *parkPlugin) ValidateAccess(ex *Exchange) (*Answer, error) {
	if ex.Value(resumedKey{}) != nil {
		ex.SetValue(resumedKey{}, nil)
		p.lot.log.add("resumed " + ex.ID)
		return nil, nil
	}
	if _, err := ex.BufferBody(64 << 10); err != nil {
		return nil, err
	}
	if p.Gate {
		p.lot.gate <- struct{}{} // in the step
		<-p.lot.gate             // let go
	}
	id := ex.ID
	pk := ex.Park(func() { p.lot.gone <- id })
	if pk == nil {
		p.lot.log.add("not parked " + id)
		return nil, nil
	}
	p.lot.log.add("park " + id)
	ex.SetValue(resumedKey{}, true)
	if p.ResumeAtOnce {
		pk.Resume()
	} else {
		p.lot.parked <- pk
	}
	return nil, ErrParked
}

// parkGateway is a gateway that parks, on a real http.Server and listener.
type parkGateway struct {
	*Gateway
	srv  *http.Server
	url  string
	addr string
	lot  *parkLot
	logs *logSink
}

// newParkGateway serves one route to backend through test_park (config cfg) on
// ln (a loopback listener when nil), with TLS when tlsConf is set.
func newParkGateway(t *testing.T, backend, cfg string, ln net.Listener, tlsConf *tls.Config) *parkGateway {
	t.Helper()
	lot := newParkLot()
	r := mustRouter(t, `
routes:
  - id: parked
    frontend: {domains: [park.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_park, config: `+cfg+`}]
`, map[string]string{"B": backend}, map[string]any{"lot": lot})
	logs := &logSink{}
	// The test's clients are trusted proxies: the X-Request-Id each sends is
	// its request's id, which the test's plugin records.
	g := NewGateway(GatewayOptions{Logger: slog.New(logs), TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	g.Swap(r)
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second}
	g.EnableParking(srv)
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	scheme := "http"
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		scheme = "https"
		go srv.ServeTLS(ln, "", "") //nolint:errcheck // ends with the test
	} else {
		go srv.Serve(ln) //nolint:errcheck // ends with the test
	}
	t.Cleanup(func() { srv.Close() })
	return &parkGateway{Gateway: g, srv: srv, url: scheme + "://" + ln.Addr().String(), addr: ln.Addr().String(), lot: lot, logs: logs}
}

// next returns the next parked request.
func (pg *parkGateway) next(t *testing.T) *Parked {
	t.Helper()
	select {
	case pk := <-pg.lot.parked:
		return pk
	case <-time.After(5 * time.Second):
		t.Fatal("no request was parked")
		return nil
	}
}

func (pg *parkGateway) accessLine(t *testing.T, id string) map[string]any {
	t.Helper()
	return (&testGateway{logs: pg.logs}).accessLine(t, id)
}

// send sends req (Host park.test) on client in the background.
func send(client *http.Client, req *http.Request) <-chan result {
	out := make(chan result, 1)
	go func() {
		res, err := client.Do(req)
		if err != nil {
			out <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		out <- result{res: res, body: string(b), err: err}
	}()
	return out
}

type result struct {
	res  *http.Response
	body string
	err  error
}

func wait(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return result{}
	}
}

func newReq(t *testing.T, method, url string, body io.Reader, id string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "park.test"
	req.Header.Set("X-Request-Id", id)
	return req
}

func TestPark_ResumedRequestIsServedAndItsConnectionKeptAlive(t *testing.T) {
	b := echoBackend(t)
	pg := newParkGateway(t, b.URL, "{}", nil, nil)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()

	ch := send(client, newReq(t, "POST", pg.url+"/first?q=1", strings.NewReader("a small body"), "park-1"))
	pk := pg.next(t)
	testwait.For(t, 5*time.Second, "the request counted as parked", func() bool { return pg.Parked() == 1 })
	if !pk.Resume() {
		t.Fatal("Resume reported the client gone")
	}
	r := wait(t, ch)
	if r.res.StatusCode != 200 || r.res.Header.Get("X-Request-Id") != "park-1" {
		t.Fatalf("answer %d, X-Request-Id %q", r.res.StatusCode, r.res.Header.Get("X-Request-Id"))
	}
	for k, want := range map[string]string{"method": "POST", "uri": "/first?q=1", "body": "a small body", "X-Request-Id": "park-1"} {
		if got, _ := field(r.body, k); got != want {
			t.Errorf("backend saw %s=%q, want %q", k, got, want)
		}
	}
	if pk.Resume() {
		t.Error("a second Resume reported success")
	}
	if pg.Parked() != 0 {
		t.Errorf("Parked() = %d after the resume", pg.Parked())
	}
	line := pg.accessLine(t, "park-1")
	if line["status"] != int64(200) || line["path"] != "/first" {
		t.Errorf("access line %v", line)
	}

	// The same connection serves the next request.
	reused := false
	req := newReq(t, "GET", pg.url+"/second", nil, "park-2")
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	}))
	ch = send(client, req)
	pg.next(t).Resume()
	if r := wait(t, ch); r.res.StatusCode != 200 {
		t.Fatalf("second answer %d", r.res.StatusCode)
	}
	if !reused {
		t.Error("the second request did not reuse the connection of the resumed one")
	}
	want := []string{"park park-1", "resumed park-1", "park park-2", "resumed park-2"}
	if got := pg.lot.log.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("steps %v, want %v", got, want)
	}
}

func TestPark_ResumeBeforeTheGatewayArmsTheWatch(t *testing.T) {
	b := echoBackend(t)
	pg := newParkGateway(t, b.URL, "{resume_at_once: true}", nil, nil)
	r := wait(t, send(http.DefaultClient, newReq(t, "GET", pg.url+"/now", nil, "at-once")))
	if got, _ := field(r.body, "uri"); r.res.StatusCode != 200 || got != "/now" {
		t.Fatalf("answer %d, uri %q", r.res.StatusCode, got)
	}
	if pg.Parked() != 0 {
		t.Errorf("Parked() = %d", pg.Parked())
	}
}

func TestPark_ClientThatHangsUpIsNoticedAndNeverReachesTheBackend(t *testing.T) {
	for _, hide := range []bool{false, true} {
		name := "epoll"
		if hide {
			name = "reading goroutine" // a connection without a file descriptor
		}
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			b := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
			defer b.Close()
			pg := newParkGateway(t, b.URL, "{}", listener(t, hide), nil)
			c, err := net.Dial("tcp", pg.addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(c, "POST /order HTTP/1.1\r\nHost: park.test\r\nX-Request-Id: leaver\r\nContent-Length: 3\r\n\r\nabc")
			pk := pg.next(t)
			testwait.For(t, 5*time.Second, "the request counted as parked", func() bool { return pg.Parked() == 1 })
			c.Close()
			select {
			case id := <-pg.lot.gone:
				if id != "leaver" {
					t.Errorf("gone for %q", id)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the hang-up was not noticed")
			}
			if pk.Resume() {
				t.Error("Resume succeeded after the client left")
			}
			if line := pg.accessLine(t, "leaver"); line["status"] != int64(499) {
				t.Errorf("access line %v, want status 499", line)
			}
			if pg.Parked() != 0 || calls.Load() != 0 {
				t.Errorf("Parked() = %d, backend calls %d", pg.Parked(), calls.Load())
			}
		})
	}
}

func TestPark_PipelinedRequestsAreAnsweredInOrder(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprint("hidden fd ", hide), func(t *testing.T) {
			b := echoBackend(t)
			pg := newParkGateway(t, b.URL, "{}", listener(t, hide), nil)
			c, err := net.Dial("tcp", pg.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprint(c, "GET /one HTTP/1.1\r\nHost: park.test\r\n\r\nGET /two HTTP/1.1\r\nHost: park.test\r\n\r\n")
			pk := pg.next(t)
			if hide {
				// The reading goroutine takes the pipelined bytes: they must reach
				// the server all the same.
				testwait.For(t, 5*time.Second, "the request counted as parked", func() bool { return pg.Parked() == 1 })
			}
			pk.Resume()
			br := bufio.NewReader(c)
			for _, want := range []string{"/one", "/two"} {
				res, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("reading the answer for %s: %v", want, err)
				}
				body, _ := io.ReadAll(res.Body)
				if got, _ := field(string(body), "uri"); got != want {
					t.Errorf("answer for %s carries uri %q", want, got)
				}
				if want == "/one" {
					pg.next(t).Resume() // the second request parks in its turn
				}
			}
		})
	}
}

func TestPark_HEADAndHTTP10AreAnsweredAsTheirClientsExpect(t *testing.T) {
	b := echoBackend(t)
	pg := newParkGateway(t, b.URL, "{}", nil, nil)

	c, err := net.Dial("tcp", pg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	fmt.Fprint(c, "HEAD /head HTTP/1.1\r\nHost: park.test\r\n\r\n")
	pg.next(t).Resume()
	res, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("HEAD answer %v, %v", res, err)
	}
	// No body may follow a HEAD answer: the next answer on the connection must
	// start right after its header.
	fmt.Fprint(c, "GET /after-head HTTP/1.1\r\nHost: park.test\r\n\r\n")
	pg.next(t).Resume()
	res, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the answer after HEAD: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if got, _ := field(string(body), "uri"); got != "/after-head" {
		t.Errorf("answer after HEAD carries uri %q", got)
	}

	c10, err := net.Dial("tcp", pg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c10.Close()
	fmt.Fprint(c10, "GET /old HTTP/1.0\r\nHost: park.test\r\n\r\n")
	pg.next(t).Resume()
	all, err := io.ReadAll(c10) // HTTP/1.0 without keep-alive: the answer ends with the connection
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(all), "HTTP/1.0 200") || !strings.Contains(string(all), "uri=/old") {
		t.Errorf("HTTP/1.0 answer:\n%s", all)
	}
}

func TestPark_TLSRequestIsServedAsTLSThenItsConnectionCloses(t *testing.T) {
	b := echoBackend(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS() // only for its certificate
	ts.Close()
	cfg := ts.TLS.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	pg := newParkGateway(t, b.URL, "{}", nil, cfg)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}}
	ch := send(client, newReq(t, "GET", pg.url+"/secure", nil, "tls-1"))
	pg.next(t).Resume()
	r := wait(t, ch)
	if got, _ := field(r.body, "X-Forwarded-Proto"); r.res.StatusCode != 200 || got != "https" {
		t.Errorf("answer %d, backend saw X-Forwarded-Proto %q", r.res.StatusCode, got)
	}
	if !r.res.Close {
		t.Error("the resumed TLS connection was kept open: its next request would not be known as TLS")
	}

	// HTTP/2 requests are never parked: they wait on their goroutine.
	h2conf := ts.TLS.Clone()
	h2conf.NextProtos = []string{"h2", "http/1.1"}
	h2 := newParkGateway(t, b.URL, "{}", nil, h2conf)
	client2 := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}}
	r = wait(t, send(client2, newReq(t, "GET", h2.url+"/h2", nil, "h2-1")))
	if r.res.ProtoMajor != 2 || r.res.StatusCode != 200 {
		t.Fatalf("answer %s %d", r.res.Proto, r.res.StatusCode)
	}
	if got := h2.lot.log.list(); fmt.Sprint(got) != "[not parked h2-1]" {
		t.Errorf("steps %v", got)
	}
}

func TestPark_WebSocketUpgradeAfterResume(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, msg, err := c.Read(r.Context())
		if err == nil {
			_ = c.Write(r.Context(), typ, append([]byte("echo:"), msg...))
		}
	}))
	defer b.Close()
	pg := newParkGateway(t, b.URL, "{}", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		if pk := pg.next(t); pk != nil {
			pk.Resume()
		}
	}()
	c, res, err := websocket.Dial(ctx, "ws://"+pg.addr+"/socket", &websocket.DialOptions{Host: "park.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answer %d", res.StatusCode)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, got, err := c.Read(ctx); err != nil || string(got) != "echo:hi" {
		t.Fatalf("got %q, %v", got, err)
	}
}

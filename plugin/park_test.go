package plugin

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reapergw/reaper/internal/freeport"
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
	g := NewGateway(GatewayOptions{Logger: slog.New(logs)})
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

func TestPark_DrainWaitsForParkedRequests(t *testing.T) {
	b := echoBackend(t)
	pg := newParkGateway(t, b.URL, "{}", nil, nil)
	if err := pg.Drain(context.Background()); err != nil {
		t.Fatalf("Drain with nothing parked: %v", err)
	}
	ch := send(http.DefaultClient, newReq(t, "GET", pg.url+"/drained", nil, "drain-1"))
	pk := pg.next(t)
	testwait.For(t, 5*time.Second, "the request counted as parked", func() bool { return pg.Parked() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := pg.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with a request parked returned %v", err)
	}
	drained := make(chan error, 1)
	go func() { drained <- pg.Drain(context.Background()) }()
	pk.Resume()
	select {
	case err := <-drained:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return after the resume")
	}
	// The server shuts down gracefully with the resumed request still served.
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := pg.srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, ch); r.res.StatusCode != 200 {
		t.Errorf("answer %d", r.res.StatusCode)
	}
}

func TestPark_RequestResumedAfterTheServerStoppedIsAbandoned(t *testing.T) {
	b := echoBackend(t)
	pg := newParkGateway(t, b.URL, "{}", nil, nil)
	ch := send(http.DefaultClient, newReq(t, "GET", pg.url+"/late", nil, "late-1"))
	pk := pg.next(t)
	testwait.For(t, 5*time.Second, "the request counted as parked", func() bool { return pg.Parked() == 1 })
	pg.srv.Close()
	pk.Resume()
	select {
	case r := <-ch:
		if r.err == nil {
			t.Fatalf("the client got an answer (%d) from a server that had stopped", r.res.StatusCode)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client was left waiting")
	}
	if line := pg.accessLine(t, "late-1"); line["status"] != int64(499) {
		t.Errorf("access line %v", line)
	}
}

// listener is a loopback listener; hide wraps its connections so that they have
// no file descriptor to watch (nil: the gateway's own).
func listener(t *testing.T, hide bool) net.Listener {
	if !hide {
		return nil
	}
	return hidingListener(t)
}

// hidingListener accepts loopback connections wrapped so that they have no file
// descriptor to watch.
func hidingListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return hiding{ln}
}

type hiding struct{ net.Listener }

func (h hiding) Accept() (net.Conn, error) {
	c, err := h.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return struct{ net.Conn }{c}, nil
}

// A parked client watched by a reading goroutine that sends more than it may
// keep ahead of its answer is dropped, not buffered without end.
func TestPark_ClientThatFloodsWhileParkedIsDropped(t *testing.T) {
	b := echoBackend(t)
	pg := newParkGateway(t, b.URL, "{}", hidingListener(t), nil)
	c, err := net.Dial("tcp", pg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /flood HTTP/1.1\r\nHost: park.test\r\nX-Request-Id: flood\r\n\r\n")
	pg.next(t)
	testwait.For(t, 5*time.Second, "the request counted as parked", func() bool { return pg.Parked() == 1 })
	go c.Write(make([]byte, maxPending+2)) //nolint:errcheck // fails once the gateway closes
	select {
	case id := <-pg.lot.gone:
		if id != "flood" {
			t.Errorf("gone for %q", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the flooding client was kept")
	}
	if line := pg.accessLine(t, "flood"); line["status"] != int64(499) || pg.Parked() != 0 {
		t.Errorf("access line %v, Parked() = %d", line, pg.Parked())
	}
}

// Many parked requests, resumed and abandoned by their clients at the same time,
// in random order: each ends exactly once, as an answer or as a client gone, and
// nothing stays parked. Run with -race, it checks the watch's bookkeeping under
// contention (descriptors reused between a hang-up and the next park).
func TestPark_ResumesAndHangUpsRacingEndEachRequestOnce(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprint("hidden fd ", hide), func(t *testing.T) {
			const n = 200
			b := echoBackend(t)
			pg := newParkGateway(t, b.URL, "{}", listener(t, hide), nil)
			pg.lot.parked = make(chan *Parked, n)
			pg.lot.gone = make(chan string, n)
			conns := make([]net.Conn, n)
			for i := range conns {
				c, err := net.Dial("tcp", pg.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				fmt.Fprintf(c, "GET /r/%d HTTP/1.1\r\nHost: park.test\r\nX-Request-Id: race-%d\r\n\r\n", i, i)
				conns[i] = c
			}
			parked := make([]*Parked, 0, n)
			for range n {
				parked = append(parked, pg.next(t))
			}
			// Half the clients leave while every request is resumed, all at once.
			done := make(chan bool, 2*n)
			for i := range n {
				go func() { done <- parked[i].Resume() }()
				if i%2 == 0 {
					go func() { conns[i].Close(); done <- false }()
				}
			}
			resumed := 0
			for range n + n/2 {
				if <-done {
					resumed++
				}
			}
			// Every request ends with one access line: 200 for those whose client
			// stayed, 200 or 499 for the others (whichever came first); each was
			// either resumed or seen gone, never both.
			testwait.For(t, 5*time.Second, "every access line", func() bool { return len(pg.logs.find("access")) == n })
			gone := len(pg.lot.gone)
			statuses := map[int64]int{}
			for _, l := range pg.logs.find("access") {
				statuses[l["status"].(int64)]++
				var i int
				fmt.Sscanf(l["request_id"].(string), "race-%d", &i)
				if i%2 == 1 && l["status"] != int64(200) {
					t.Errorf("client %d stayed but got %v", i, l["status"])
				}
			}
			// A request resumed after its client left is answered to nobody: 499 too.
			if statuses[499] < gone || statuses[200]+statuses[499] != n || resumed+gone != n {
				t.Errorf("statuses %v, %d gone, %d resumed, of %d", statuses, gone, resumed, n)
			}
			testwait.For(t, 5*time.Second, "nothing parked", func() bool { return pg.Parked() == 0 })
		})
	}
}

func init() {
	Register(Info{ID: "test_park_dial", New: func() Plugin { return &parkDialPlugin{} }})
}

// parkDialPlugin parks a request whose backend refused the connection; resumed,
// it asks for the request to be sent again.
type parkDialPlugin struct{ lot *parkLot }

func (p *parkDialPlugin) Provision(ctx ProvisionContext) error {
	p.lot = ctx.Services["lot"].(*parkLot)
	return nil
}

func (p *parkDialPlugin) HandleDialFailure(ex *Exchange, err error) (DialAction, *Answer) {
	if ex.Value(resumedKey{}) != nil {
		p.lot.log.add("resumed after " + err.Error())
		return DialRetry, nil
	}
	if _, err := ex.BufferBody(64 << 10); err != nil {
		return DialPass, nil
	}
	pk := ex.Park(nil)
	if pk == nil {
		p.lot.log.add("not parked")
		return DialPass, nil
	}
	ex.SetValue(resumedKey{}, true)
	p.lot.parked <- pk
	return DialParked, nil
}

// A DialFailureHandler may park the request too: resumed, it is asked again with
// the same error, and the request is sent once more, its body intact.
func TestPark_DialFailureHandlerParksThenTheRequestIsSentAgain(t *testing.T) {
	addr := freeport.Addr(t) // nothing listens there yet
	lot := newParkLot()
	r := mustRouter(t, `
routes:
  - id: down
    frontend: {domains: [down.test]}
    backend: {targets: ["http://$A"]}
    plugins: [{plugin: test_park_dial}]
`, map[string]string{"A": addr}, map[string]any{"lot": lot})
	logs := &logSink{}
	g := NewGateway(GatewayOptions{Logger: slog.New(logs)})
	g.Swap(r)
	srv := &http.Server{Handler: g}
	g.EnableParking(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // ends with the test
	defer srv.Close()
	pg := &parkGateway{Gateway: g, srv: srv, lot: lot, logs: logs}

	req := newReq(t, "POST", "http://"+ln.Addr().String()+"/order", strings.NewReader("two coffees"), "dial-1")
	req.Host = "down.test"
	ch := send(http.DefaultClient, req)
	pk := pg.next(t)
	// The backend comes up (as a woken app would), then the request resumes.
	backend := &http.Server{Handler: echoBackend(t).Config.Handler}
	bl, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go backend.Serve(bl) //nolint:errcheck // ends with the test
	defer backend.Close()
	pk.Resume()
	res := wait(t, ch)
	if got, _ := field(res.body, "body"); res.res.StatusCode != 200 || got != "two coffees" {
		t.Fatalf("answer %d, backend saw body %q", res.res.StatusCode, got)
	}
	if got := lot.log.list(); len(got) != 1 || !strings.HasPrefix(got[0], "resumed after ") {
		t.Errorf("steps %v", got)
	}
	if line := pg.accessLine(t, "dial-1"); line["status"] != int64(200) {
		t.Errorf("access line %v", line)
	}
}

// A request still in the step that will park it when Drain is called is waited
// for as well: a node shutting down must not drop it between its hold and its park.
func TestPark_DrainWaitsForARequestAboutToPark(t *testing.T) {
	b := echoBackend(t)
	pg := newParkGateway(t, b.URL, "{gate: true}", nil, nil)
	ch := send(http.DefaultClient, newReq(t, "GET", pg.url+"/soon", nil, "soon-1"))
	<-pg.lot.gate // the request is in the step, not parked yet
	drained := make(chan error, 1)
	go func() { drained <- pg.Drain(context.Background()) }()
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) while a request was about to park", err)
	case <-time.After(50 * time.Millisecond):
	}
	pg.lot.gate <- struct{}{}
	pg.next(t).Resume()
	select {
	case err := <-drained:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return after the resume")
	}
	if r := wait(t, ch); r.res.StatusCode != 200 {
		t.Errorf("answer %d", r.res.StatusCode)
	}
}

package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

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

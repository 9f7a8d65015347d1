package reaper

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// staleProxy stands between the gateway and the app and can make the
// connections open through it stale, as an app that stops leaves behind the
// connections it never accepted (its listen backlog overflowed): the gateway's
// side sees nothing, and the first bytes it sends on one get a reset.
type staleProxy struct {
	ln      net.Listener
	backend string
	mu      sync.Mutex
	conns   map[*proxied]bool
	resets  atomic.Int64
}

type proxied struct {
	client, backend net.Conn
	stale           atomic.Bool
}

func newStaleProxy(t *testing.T, backend string) *staleProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &staleProxy{ln: ln, backend: backend, conns: map[*proxied]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *staleProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", p.backend)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxied{client: c, backend: b}
		p.mu.Lock()
		p.conns[pc] = true
		p.mu.Unlock()
		go io.Copy(c, b) //nolint:errcheck // ends when either side closes
		go p.pump(pc)
	}
}

// pump forwards what the gateway sends, until the connection goes stale: then
// the first bytes get a reset, and nothing reaches the app.
func (p *staleProxy) pump(pc *proxied) {
	buf := make([]byte, 32<<10)
	for {
		n, err := pc.client.Read(buf)
		if n > 0 && pc.stale.Load() {
			p.resets.Add(1)
			pc.client.(*net.TCPConn).SetLinger(0) // close with a reset
			pc.client.Close()
			return
		}
		if n > 0 {
			if _, werr := pc.backend.Write(buf[:n]); werr != nil {
				pc.client.Close()
				return
			}
		}
		if err != nil {
			pc.client.Close()
			pc.backend.Close()
			return
		}
	}
}

// goStale makes every connection open now stale: the app's side is gone, the
// gateway's is left as it is.
func (p *staleProxy) goStale() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		pc.stale.Store(true)
		pc.backend.Close()
		delete(p.conns, pc)
	}
}

// The first POST after a wake, with a body too large to be held in memory (so it
// cannot be sent again), must not ride a connection kept idle across the app's
// sleep: the engine drops the idle connections to an app's backends when it
// stops and when it wakes.
func TestWake_ThePostAfterAWakeNeverRidesAConnectionFromBeforeTheSleep(t *testing.T) {
	rig := &holdRig{}
	app := httptest.NewServer(rig)
	t.Cleanup(app.Close)
	proxy := newStaleProxy(t, app.Listener.Addr().String())
	rig.start(t, true, "{app_id: app, ready_delay: 0}", "http://"+proxy.ln.Addr().String())

	// Awake: a burst of GETs wakes it, and leaves keep-alive connections idle in
	// the pool.
	go func() {
		testwait.For(t, 5*time.Second, "the first start asked", func() bool { return rig.fake.Count("start", "app") == 1 })
		rig.fake.FinishStart("app")
	}()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, err := http.Get(fmt.Sprintf("%s/warm/%d", rig.front.URL, i))
			if err != nil || res.StatusCode != 200 {
				t.Errorf("GET while up: %v %v", res, err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		})
	}
	wg.Wait()

	// It goes to sleep: the connections through the proxy go stale.
	proxy.goStale()
	rig.fake.Set("app", paastest.App{State: paas.StateShouldBeDown})
	testwait.For(t, 5*time.Second, "the app is Down", func() bool { return rig.app.status() == StatusDown })

	// A 1 MiB chunked POST wakes it, and is released to it.
	payload := make([]byte, 1<<20)
	rand.Read(payload)
	want := sha256.Sum256(payload)
	done := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, rig.front.URL+"/upload", io.NopCloser(bytes.NewReader(payload)))
		req.ContentLength = -1
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("POST: %v", err)
		}
		done <- res
	}()
	testwait.For(t, 5*time.Second, "a start asked", func() bool { return rig.fake.Count("start", "app") >= 2 })
	rig.fake.FinishStart("app")
	res := <-done
	if res == nil {
		t.FailNow()
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	got := rig.received()
	last := got[len(got)-1]
	if res.StatusCode != 200 || last != fmt.Sprintf("POST /upload %s", payload) {
		t.Fatalf("POST after the wake: %d %.80q; the app last received %.60q (resets on stale connections: %d)",
			res.StatusCode, body, last, proxy.resets.Load())
	}
	if sum := sha256.Sum256(bytes.TrimPrefix(body, []byte("from the app: "))); sum != want {
		t.Errorf("the body came back changed")
	}
	if n := proxy.resets.Load(); n != 0 {
		t.Errorf("%d requests were sent on stale connections", n)
	}
}

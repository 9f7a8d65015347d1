package reaper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

// A client POSTs to a sleeping app in hold mode, then gives up before the app is
// up. Its request must not reach the app when it wakes: the client is gone, and may
// well have sent it again. Parked or waiting on its goroutine, the same.
func TestHold_APostWhoseClientLeftNeverReachesTheApp(t *testing.T) {
	for _, parking := range []bool{false, true} {
		t.Run(map[bool]string{false: "goroutine", true: "parked"}[parking], func(t *testing.T) {
			rig := newHoldRig(t, parking, "{app_id: app, ready_delay: 0}")
			a := rig.app
			c, err := net.Dial("tcp", rig.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte("POST /pay HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Length: 12\r\n\r\namount=100EU"))
			want := map[bool]int{false: 0, true: 1}[parking]
			testwait.For(t, 5*time.Second, "the request is held", func() bool {
				return a.held.Load() == 1 && rig.gw.Parked() == want // held counts before the request parks
			})
			c.Close() // the client gives up
			testwait.For(t, 5*time.Second, "the hold ends with its client", func() bool {
				return a.held.Load() == 0 && a.inFlight.Load() == 0 && rig.gw.Parked() == 0
			})
			// The platform finishes the start once it was asked for it:
			// finished before, the start would undo it (a busy machine
			// delays the job's start past the client's end).
			testwait.For(t, 5*time.Second, "the start call", func() bool { return rig.fake.Count("start", "app") == 1 })
			rig.fake.FinishStart("app") // the app comes up
			testwait.For(t, 5*time.Second, "the app is Up", func() bool { return a.status() == StatusUp })
			if got := rig.received(); len(got) != 0 {
				t.Errorf("the app received %q from a client that had gone before it woke", got)
			}
		})
	}
}

// holdRig is a node in front of one sleeping app ("app", fake platform, started
// by hand with fake.FinishStart) behind a real loopback gateway.
type holdRig struct {
	engine *Engine
	fake   *paastest.Fake
	gw     *plugin.Gateway
	front  *httptest.Server
	app    *app
	// observer, when set before start, is the engine's.
	observer Observer

	mu  sync.Mutex
	got []string // "METHOD /path body" of each request the app received
	// logs holds the engine's, the job's and the gateway's lines, shown when
	// the test fails.
	logs lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newHoldRig starts the rig; cfg is the reaper plugin's config. With parking, the
// gateway parks held HTTP/1 requests as the binary's does.
func newHoldRig(t *testing.T, parking bool, cfg string) *holdRig {
	t.Helper()
	rig := &holdRig{}
	backend := httptest.NewServer(rig)
	t.Cleanup(backend.Close)
	rig.start(t, parking, cfg, backend.URL)
	return rig
}

// ServeHTTP is the app: it records the request and answers with its body.
func (rig *holdRig) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rig.mu.Lock()
	rig.got = append(rig.got, r.Method+" "+r.URL.Path+" "+string(b))
	rig.mu.Unlock()
	io.WriteString(w, "from the app: "+string(b))
}

// start runs the rig with the route's backend at target.
func (rig *holdRig) start(t *testing.T, parking bool, cfg, target string) {
	t.Helper()

	rig.fake = paastest.New("app")
	rig.fake.Manual = true
	store := newTestStore(t)
	log := slog.New(slog.NewTextHandler(&rig.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", rig.logs.String())
		}
	})
	rig.engine = NewEngine(EngineOptions{Node: "n1", Store: store, PollInterval: 50 * time.Millisecond, Observer: rig.observer, Logger: log})
	job := NewJob(JobOptions{Engine: rig.engine, Store: store, PaaS: rig.fake, FastInterval: 50 * time.Millisecond, FullInterval: time.Second, Logger: log})
	rig.engine.SetAsker(job)
	opts := plugin.BuildOptions{Logger: log, Services: map[string]any{ServiceName: rig.engine}}
	rt, err := plugin.BuildRouter(context.Background(), routesYAML(t, `
- id: r1
  frontend: {domains: ["*"]}
  backend: {targets: ["`+target+`"]}
  plugins:
    - plugin: reaper
      config: `+cfg+`
`), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	rig.gw = plugin.NewGateway(plugin.GatewayOptions{Logger: log})
	rig.gw.Swap(rt)
	rig.front = httptest.NewUnstartedServer(rig.gw)
	if parking {
		rig.gw.EnableParking(rig.front.Config)
	}
	rig.front.Start()
	t.Cleanup(rig.front.Close)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); rig.engine.Run(ctx) }()
	go func() { defer wg.Done(); job.Run(ctx, 0) }()
	t.Cleanup(func() { rig.engine.Shutdown(); drainParked(t, rig.gw); cancel(); wg.Wait() })
	rig.app = rig.engine.app("app")
	testwait.For(t, 5*time.Second, "the app is seen Down", func() bool { return rig.app.status() == StatusDown })
}

func (rig *holdRig) received() []string {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return append([]string(nil), rig.got...)
}

// A held request whose body is not read into memory waits on its goroutine with
// the rest of its body unread, where net/http does not notice its client leaving.
// The gateway watches the connection for the client's end: a client that leaves
// frees its place at once, and its request never reaches the app. (The end of a
// client's stream arrives after its data: a client whose unsent body is stuck
// behind TCP's flow control is seen leaving only when its system gives up on the
// connection.)
func TestHold_AClientThatLeavesWithItsBodyUnreadFreesItsPlace(t *testing.T) {
	for name, send := range map[string]func(c net.Conn){
		// curl's way with bodies over 1 MiB: the body waits for 100 Continue,
		// which the gateway sends when it reads it.
		"expect 100-continue": func(c net.Conn) {
			c.Write([]byte("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\nExpect: 100-continue\r\n\r\n"))
		},
		"content-length over 64 KiB": func(c net.Conn) {
			c.Write([]byte("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 80000\r\n\r\n"))
			c.Write(make([]byte, 80000))
		},
		"chunked over 64 KiB": func(c net.Conn) {
			c.Write([]byte("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"))
			for range 5 {
				fmt.Fprintf(c, "%x\r\n%s\r\n", 16<<10, make([]byte, 16<<10))
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0}")
			a := rig.app
			c, err := net.Dial("tcp", rig.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() }) // before the rig's: its server waits for the request
			send(c)
			testwait.For(t, 5*time.Second, "the request is held", func() bool { return a.held.Load() == 1 })
			c.Close() // the client gives up
			testwait.For(t, 5*time.Second, "the hold ends with its client", func() bool {
				return a.held.Load() == 0 && a.inFlight.Load() == 0
			})
			testwait.For(t, 5*time.Second, "the start call", func() bool { return rig.fake.Count("start", "app") == 1 })
			rig.fake.FinishStart("app")
			testwait.For(t, 5*time.Second, "the app is Up", func() bool { return a.status() == StatusUp })
			if got := rig.received(); len(got) != 0 {
				t.Errorf("the app received %d requests from a client that had gone before it woke", len(got))
			}
		})
	}
}

package tcproute

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/reaper"
)

func TestClash(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:5432", "127.0.0.1:5432", true},
		{"127.0.0.1:5432", "127.0.0.2:5432", false},
		{":5432", "127.0.0.1:5432", true},
		{"0.0.0.0:5432", "10.0.0.1:5432", true},
		{"[::]:5432", "127.0.0.1:5432", true},
		{"127.0.0.1:5432", "127.0.0.1:5433", false},
		{"127.0.0.1:0", "127.0.0.1:0", false}, // any free port: two different ones
		{"127.0.0.1:5432", "", false},
	} {
		if got := clash(tc.a, tc.b); got != tc.want {
			t.Errorf("clash(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSweepEvery(t *testing.T) {
	for idle, want := range map[time.Duration]time.Duration{
		0: time.Second, 20 * time.Millisecond: 10 * time.Millisecond, 200 * time.Millisecond: 50 * time.Millisecond,
		2 * time.Second: 500 * time.Millisecond, time.Hour: time.Second,
	} {
		if got := sweepEvery(idle); got != want {
			t.Errorf("sweepEvery(%v) = %v, want %v", idle, got, want)
		}
	}
}

func TestHoldEnd(t *testing.T) {
	for err, want := range map[error]string{
		reaper.ErrAppFailed: EndAppFailed, reaper.ErrHoldTimeout: EndFailTimeout, reaper.ErrTooManyHeld: EndTooManyHeld,
		reaper.ErrShuttingDown: EndShutdown, context.Canceled: EndClientGone,
	} {
		if got := holdEnd(err); got != want {
			t.Errorf("holdEnd(%v) = %q, want %q", err, got, want)
		}
	}
}

// node is one reaper node's engine and job over the recording platform, with a
// TCP route in front of a real listener of the test.
type node struct {
	fake   *paastest.Fake
	engine *reaper.Engine
	store  *reaper.MemStore
	srv    *Server
	logs   *logtest.Buffer
	route  string
}

func startNode(t *testing.T, target string, mutate func(*Config)) *node {
	t.Helper()
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store, err := reaper.NewMemStore(reaper.MemStoreOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	fake := paastest.New("db")
	engine := reaper.NewEngine(reaper.EngineOptions{Node: "n1", Store: store, Logger: log})
	job := reaper.NewJob(reaper.JobOptions{Engine: engine, Store: store, PaaS: fake, Logger: log, FastInterval: 50 * time.Millisecond, FullInterval: time.Second})
	engine.SetAsker(job)
	cfg := Config{ID: "db-tcp", Listen: "127.0.0.1:0", AppID: "db", Target: target}
	if mutate != nil {
		mutate(&cfg)
	}
	var errs conf.Errors
	cfg.Validate("tcp_routes[0]", &errs)
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Routes: []Config{cfg}, Logger: log,
		Claim: func(id string, p *reaper.Config) App { return engine.Claim(id, id, p) }})
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { store.Run(ctx) })
	wg.Go(func() { engine.Run(ctx) })
	wg.Go(func() { job.Run(ctx, 0) })
	wg.Go(func() { srv.Serve(ctx) })
	t.Cleanup(func() {
		engine.Shutdown()
		cancel()
		wg.Wait()
		store.Close()
	})
	return &node{fake: fake, engine: engine, store: store, srv: srv, logs: logs, route: srv.Addr("db-tcp").String()}
}

// awaitAsleep waits for the job's first look at the app: until then the route
// dials it directly (its status is not known, as an HTTP route lets requests
// through).
func (n *node) awaitAsleep(t *testing.T) {
	testwait.For(t, 5*time.Second, "the app seen asleep", func() bool {
		rec, ok := n.engine.Record("db")
		return ok && rec.Status.Asleep()
	})
}

func TestSplice_AHalfCloseIsPassedOnAndTheAnswerStillComes(t *testing.T) {
	// The app reads its request to the end (the client's FIN), then answers
	// and closes: it needs the half-close passed on, and the client its answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, _ := io.ReadAll(c)
			_, _ = c.Write(bytes.ToUpper(req))
			_ = c.Close()
		}
	}()
	n := startNode(t, ln.Addr().String(), nil)
	n.awaitAsleep(t)
	c, err := net.Dial("tcp", n.route)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("select 1"))
	// Once spliced: while held, a half-close looks like a client that left (on
	// the wire both are a FIN), and a client that left is never dialled.
	testwait.For(t, 10*time.Second, "the connection spliced", func() bool { c, _ := n.srv.Counts("db-tcp"); return c.Spliced == 1 })
	_ = c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "SELECT 1" {
		t.Fatalf("answer %q, %v", got, err)
	}
	if starts := n.fake.Count("start", "db"); starts != 1 {
		t.Errorf("starts = %d, want 1", starts)
	}
	testwait.For(t, 5*time.Second, "the access log line", func() bool { return strings.Contains(n.logs.String(), `"msg":"tcp connection"`) })
	for _, want := range []string{`"bytes_in":8`, `"bytes_out":8`, `"ended":"closed"`, `"route":"db-tcp"`} {
		if !strings.Contains(n.logs.String(), want) {
			t.Errorf("access log without %s:\n%s", want, n.logs.String())
		}
	}
}

func TestConn_AClientThatClosesWhileHeldIsGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := startNode(t, ln.Addr().String(), nil)
	n.fake.Manual = true // started, not up until the test says so
	n.awaitAsleep(t)
	for _, send := range []string{"", "FLUSHALL\r\n"} {
		c, err := net.Dial("tcp", n.route)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(send))
		_ = c.Close()
	}
	testwait.For(t, 5*time.Second, "both held clients gone", func() bool {
		return strings.Count(n.logs.String(), `"ended":"client_gone"`) == 2
	})
	if c, _ := n.srv.Counts("db-tcp"); c.Held != 0 {
		t.Errorf("held = %d after the clients left", c.Held)
	}
}

func TestConn_PastMaxHeldAndFailTimeoutTheConnectionIsClosedWithItsReason(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := startNode(t, ln.Addr().String(), func(c *Config) {
		c.MaxHeld = 1
		c.FailTimeout = conf.Duration(time.Second)
	})
	n.fake.Manual = true // started, never up
	n.awaitAsleep(t)
	first, err := net.Dial("tcp", n.route)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	testwait.For(t, 5*time.Second, "the first connection held", func() bool { c, _ := n.srv.Counts("db-tcp"); return c.Held == 1 })
	second, err := net.Dial("tcp", n.route)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	for _, c := range []net.Conn{second, first} { // the second at once, the first at its fail timeout
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("read: %v, want the connection closed", err)
		}
	}
	// The first: at its fail timeout, or as the job puts the app that did not
	// come up in Error (one fail timeout after the wake): whichever comes first.
	testwait.For(t, 5*time.Second, "both access log lines", func() bool {
		logs := n.logs.String()
		return strings.Contains(logs, `"ended":"too_many_held"`) &&
			(strings.Contains(logs, `"ended":"fail_timeout"`) || strings.Contains(logs, `"ended":"app_failed"`))
	})
}

func TestSweep_AConnectionHeldLongerThanTheIdleTimeoutIsNotReapedBeforeTheAppAnswers(t *testing.T) {
	const idle = time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		time.Sleep(idle * 2 / 5) // the app's work: longer than a sweep period (250 ms), within the idle timeout
		_, _ = c.Write([]byte("world"))
	}()
	n := startNode(t, ln.Addr().String(), func(c *Config) { c.ConnectionIdleTimeout = conf.Duration(idle) })
	n.fake.Manual = true
	n.awaitAsleep(t)
	c, err := net.Dial("tcp", n.route)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil { // its first message, then held
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the connection held", func() bool { h, _ := n.srv.Counts("db-tcp"); return h.Held == 1 })
	time.Sleep(2 * idle) // held for longer than the idle timeout: the duration under test
	n.fake.FinishStart("db")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "world" {
		t.Fatalf("the app's answer: %q, %v; the connection was reaped before it came?\n%s", buf, err, n.logs.String())
	}
}

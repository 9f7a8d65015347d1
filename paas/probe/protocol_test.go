package probe

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/pgtest"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
)

// probeUntil probes c until it finds something other than Unreached (the server
// opened its port), and returns that.
func probeUntil(t *testing.T, p *Prober, c *Config) (Result, error) {
	t.Helper()
	var (
		res Result
		err error
	)
	testwait.For(t, 30*time.Second, c.Kind()+" probe reaching "+c.Addr(), func() bool {
		res, err = p.Check(context.Background(), c)
		return res != Unreached
	})
	return res, err
}

func TestProber_PostgresReadyOnceItTakesConnections(t *testing.T) {
	cl := pgtest.Init(t)
	p := New(nil)
	defer p.Close()
	port := pgtest.FreePort(t)
	c := &Config{Postgres: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if res, err := p.Check(context.Background(), c); res != Unreached || !Refused(err) {
		t.Fatalf("before postgres runs: %v, %v; want Unreached, refused", res, err)
	}
	srv := cl.Run()
	c.Postgres = srv.Addr
	res, err := probeUntil(t, p, c)
	for res == Starting {
		// Postgres opens its port before it has replayed its WAL: 57P03 then.
		if err == nil || !strings.Contains(err.Error(), "57P03") {
			t.Fatalf("a postgres that answered is not ready for another reason than 57P03: %v", err)
		}
		res, err = p.Check(context.Background(), c)
	}
	if res != Ready {
		t.Fatalf("probe = %v, %v", res, err)
	}
	// Ready means a query runs now, not later.
	if err := pgtest.AwaitQuery(context.Background(), srv.Addr); err != nil {
		t.Fatal(err)
	}
}

func TestProber_PostgresStartingUpIsNotReady(t *testing.T) {
	// A standby without hot standby accepts connections and answers each with
	// 57P03 for as long as it runs: a server that is still starting, forever.
	cl := pgtest.Init(t)
	cl.Standby()
	srv := cl.Run()
	p := New(nil)
	defer p.Close()
	c := &Config{Postgres: srv.Addr}
	res, err := probeUntil(t, p, c)
	if res != Starting || err == nil || !strings.Contains(err.Error(), "57P03") {
		t.Fatalf("probe of a postgres answering 57P03 = %v, %v; want Starting, 57P03\n%s", res, err, srv.Output())
	}
	for range 3 {
		if res, _ := p.Check(context.Background(), c); res != Starting {
			t.Fatalf("probe = %v on a later try", res)
		}
	}
}

func TestProber_ProtocolProbesOfAServerThatSaysNothing(t *testing.T) {
	// One server closes every connection at once, one accepts and stays silent:
	// neither is ready, and the silent one holds the probe only until its context ends.
	closing := listen(t, func(c net.Conn) { _ = c.Close() })
	silent := listen(t, func(c net.Conn) { t.Cleanup(func() { _ = c.Close() }) })
	p := New(nil)
	defer p.Close()
	for _, c := range []*Config{{Postgres: closing}, {Redis: closing}, {Postgres: silent}, {Redis: silent}} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		res, err := p.Check(ctx, c)
		cancel()
		if res != NotReady || err == nil {
			t.Errorf("%s %s: %v, %v; want NotReady with a reason", c.Kind(), c.Addr(), res, err)
		}
	}
}

func listen(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
		}
	}()
	return ln.Addr().String()
}

func TestProber_Redis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	p := New(nil)
	defer p.Close()
	if res, err := p.Check(context.Background(), &Config{Redis: srv.Addr()}); res != Ready {
		t.Fatalf("probe of a running redis = %v, %v", res, err)
	}
	srv.Stop()
	if res, _ := p.Check(context.Background(), &Config{Redis: srv.Addr()}); res != Unreached {
		t.Fatalf("probe of a stopped redis = %v", res)
	}
}

func TestProber_RedisWithAPassword(t *testing.T) {
	const secret = "s3cr3t-pw"
	srv := redistest.Start(t, redistest.Options{Password: secret})
	var logs bytes.Buffer
	p := New(slog.New(slog.NewTextHandler(&logs, nil)))
	defer p.Close()

	// Without the password: the server answers NOAUTH, whether or not it has
	// loaded; the probe cannot tell, says so once, and is not ready.
	for range 3 {
		if res, err := p.Check(context.Background(), &Config{Redis: srv.Addr()}); res != NotReady || !errors.Is(err, ErrNoAuth) {
			t.Fatalf("probe without the password = %v, %v; want NotReady, ErrNoAuth", res, err)
		}
	}
	if n := strings.Count(logs.String(), "NOAUTH"); n != 1 {
		t.Errorf("NOAUTH logged %d times, want once:\n%s", n, logs.String())
	}
	if res, err := p.Check(context.Background(), &Config{Redis: srv.Addr(), Password: "wrong-pw"}); res != NotReady || err == nil || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("probe with a wrong password = %v, %v; want NotReady, without the password in the error", res, err)
	}
	if res, err := p.Check(context.Background(), &Config{Redis: srv.Addr(), Password: secret}); res != Ready {
		t.Errorf("probe with the password = %v, %v", res, err)
	}
	if res, err := p.Check(context.Background(), &Config{Redis: srv.Addr(), Username: "default", Password: secret}); res != Ready {
		t.Errorf("probe with the user and password = %v, %v", res, err)
	}
	if strings.Contains(logs.String(), "pw") {
		t.Errorf("a password reached the log:\n%s", logs.String())
	}
}

func TestProber_RedisLoadingIsNotReady(t *testing.T) {
	// key-load-delay slows the loading of each key: 5,000 keys load for 2.5 s,
	// during which Redis answers -LOADING (it handles clients every 1 KiB read).
	srv := redistest.Start(t, redistest.Options{Config: []string{
		"enable-debug-command local", "key-load-delay 500", "loading-process-events-interval-bytes 1024",
	}})
	for _, cmd := range [][]string{{"DEBUG", "POPULATE", "5000"}, {"SAVE"}} {
		if _, err := srv.Do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	srv.Relaunch()
	p := New(nil)
	defer p.Close()
	c := &Config{Redis: srv.Addr()}
	res, err := probeUntil(t, p, c)
	if res != Starting || err == nil || !strings.Contains(err.Error(), "LOADING") {
		t.Fatalf("probe of a loading redis = %v, %v; want Starting, LOADING", res, err)
	}
	testwait.For(t, 60*time.Second, "the loaded redis ready", func() bool { return p.Probe(context.Background(), c) == Ready })
	if n, err := srv.Do("DBSIZE"); err != nil || n != "5000" {
		t.Errorf("ready with DBSIZE %s, %v: not loaded", n, err)
	}
}

package tcproute

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/reaper"
)

// upperApp answers each connection with what it read, upper-cased, once the
// client closed its half; it returns its address.
func upperApp(t *testing.T) string {
	t.Helper()
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
			go func() {
				defer c.Close()
				req, _ := io.ReadAll(c)
				_, _ = c.Write(bytes.ToUpper(req))
			}()
		}
	}()
	return ln.Addr().String()
}

// The admin API shows a TCP route on its app's page and in /api/tcp_routes,
// with the connections open now and the bytes of those that ended, as the
// typed client reads them.
func TestViews_TheAdminAPIShowsTheRouteAndItsConnections(t *testing.T) {
	n := startNode(t, upperApp(t), nil)
	n.awaitAsleep(t)
	c, err := net.Dial("tcp", n.route)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	_, _ = c.Write([]byte("select 1"))
	// Half-closed while held, it would be a client that left (see
	// TestSplice_AHalfCloseIsPassedOnAndTheAnswerStillComes).
	testwait.For(t, 10*time.Second, "the connection spliced", func() bool { return n.srv.Views()[0].Open == 1 })
	_ = c.(*net.TCPConn).CloseWrite()
	if got, err := io.ReadAll(c); err != nil || string(got) != "SELECT 1" {
		t.Fatalf("answer %q, %v", got, err)
	}
	_ = c.Close()
	open, err := net.Dial("tcp", n.route) // stays open: spliced to the app
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	testwait.For(t, 10*time.Second, "one connection ended, one spliced", func() bool {
		v := n.srv.Views()[0]
		return v.Open == 1 && v.BytesOut == 8
	})

	api := adminapi.InProcess((&reaper.AdminAPI{Engine: n.engine, Store: n.store, TCPRoutes: n.srv.Views}).Handler(), "test")
	app, err := api.App(context.Background(), "db")
	if err != nil {
		t.Fatal(err)
	}
	want := reaper.TCPRouteView{ID: "db-tcp", AppID: "db", Listen: n.route, Target: n.srv.routes[0].cfg.Target, Mode: ModeRequestResponse,
		IdleTimeout: "1h0m0s", Open: 1, Held: 0, Accepted: 2, BytesIn: 8, BytesOut: 8}
	if len(app.TCPRoutes) != 1 || app.TCPRoutes[0] != want {
		t.Errorf("the app's TCP routes: %+v\nwant [%+v]", app.TCPRoutes, want)
	}
	all, err := api.TCPRoutes(context.Background())
	if err != nil || len(all) != 1 || all[0] != want {
		t.Errorf("/api/tcp_routes: %+v, %v", all, err)
	}
}

// A connection reaped for being byte-idle is counted as such, not as refused.
func TestViews_AReapedConnectionIsCounted(t *testing.T) {
	n := startNode(t, upperApp(t), func(c *Config) {
		c.ConnectionIdleTimeout = conf.Duration(200 * time.Millisecond)
	})
	n.awaitAsleep(t)
	c, err := net.Dial("tcp", n.route)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testwait.For(t, 10*time.Second, "the quiet connection reaped", func() bool {
		v := n.srv.Views()[0]
		return v.Reaped == 1 && v.Open == 0
	})
	if v := n.srv.Views()[0]; v.Accepted != 1 || v.Refused != 0 || v.IdleTimeout != "200ms" {
		t.Errorf("after one reaped connection: %+v", v)
	}
}

func TestTally_Ended(t *testing.T) {
	var tl tally
	for _, how := range []string{EndClosed, EndReset, EndIdle, EndShutdown, EndClientGone, EndFailTimeout, EndTooManyHeld, EndAppFailed, EndDialFailed} {
		tl.ended(how, 3, 5)
	}
	if r, f, in, out := tl.reaped.Load(), tl.refused.Load(), tl.in.Load(), tl.out.Load(); r != 1 || f != 4 || in != 27 || out != 45 {
		t.Errorf("reaped %d refused %d in %d out %d; want 1, 4 (fail_timeout, too_many_held, app_failed, dial_failed), 27, 45", r, f, in, out)
	}
}

// Package tcproute wakes apps on TCP: a TCP route owns a port for its app's
// whole life, holds each connection while the app wakes (one wake for a burst),
// then dials the app and splices the bytes both ways. It never reads what a
// client sends before the app is up (a Postgres startup packet waits in the
// kernel's buffer, a MySQL client waits for the server's greeting), so any
// protocol passes, server-speaks-first ones included.
//
// It reaches the engine only through the small port it declares (App), which
// reaper.Route implements: status, holds, traffic and wake asks, shared with
// the app's HTTP routes.
package tcproute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// App is one app as a TCP route needs it: the engine's port (reaper.Route).
type App interface {
	// Status is the app's last known status; it never waits.
	Status() reaper.Status
	// Hold waits until the app is up, asking for its wake; done(ok) says
	// whether the dial that followed worked. Its errors say why the app is not
	// up (reaper.ErrAppFailed, ErrHoldTimeout, ErrTooManyHeld, ErrShuttingDown).
	Hold(ctx context.Context, deadline time.Time) (done func(ok bool), err error)
	// Begin counts an open connection as traffic until end; false: the app went
	// to sleep meanwhile.
	Begin() (end func(), ok bool)
	// Touch records that bytes flowed now.
	Touch()
	// Answered records that the app took a held connection: the wake's last
	// phase (once per wake).
	Answered()
	// Refused says that the app, believed up, refused a dial; true: it is now
	// seen asleep (a wake is asked), hold again.
	Refused(ctx context.Context) bool
	// Release withdraws the route's claim on the app.
	Release()
}

// Options configures a Server.
type Options struct {
	// Routes are the TCP routes, validated (Config.Validate).
	Routes []Config
	// Claim claims an app for a route with its policy (reaper.Engine.Claim).
	Claim func(routeID string, policy *reaper.Config) App
	// Logger receives the access log (one line per connection) and errors.
	Logger *slog.Logger
	// DialTimeout bounds one dial of a target (default 5 s).
	DialTimeout time.Duration
	// Observer is told what the routes do (metrics); nil: nothing.
	Observer Observer
}

// Observer is told what TCP routes do; the metrics implement it. Its methods
// must not block.
type Observer interface {
	// TCPHeldWait: a connection was held d while its app woke.
	TCPHeldWait(route string, d time.Duration)
	// TCPConnectionEnded: a connection ended so (an End… value), with in bytes
	// from its client to the app and out bytes back.
	TCPConnectionEnded(route, ended string, in, out int64)
}

type noObserver struct{}

func (noObserver) TCPHeldWait(string, time.Duration)               {}
func (noObserver) TCPConnectionEnded(string, string, int64, int64) {}

// Server listens on every TCP route's port.
type Server struct {
	log      *slog.Logger
	observer Observer
	dialer   net.Dialer
	routes   []*route

	mu     sync.Mutex
	closed bool
	conns  sync.WaitGroup
}

// New claims the routes' apps and returns a Server; Listen binds their ports.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	s := &Server{log: opts.Logger, observer: opts.Observer, dialer: net.Dialer{Timeout: opts.DialTimeout}}
	if s.observer == nil {
		s.observer = noObserver{}
	}
	for i := range opts.Routes {
		c := &opts.Routes[i]
		s.routes = append(s.routes, newRoute(s, c, opts.Claim(c.ID, c.Policy())))
	}
	return s
}

// Listen binds every route's port; on an error none stays bound, and the error
// names the route.
func (s *Server) Listen(ctx context.Context) error {
	var lc net.ListenConfig
	for i, r := range s.routes {
		ln, err := lc.Listen(ctx, "tcp", r.cfg.Listen)
		if err != nil {
			for _, bound := range s.routes[:i] {
				_ = bound.ln.Close()
			}
			return fmt.Errorf("tcp route %s: %w", r.cfg.ID, err)
		}
		r.ln = ln.(*net.TCPListener)
	}
	return nil
}

// Addr is where the route id listens (after Listen): its port when the
// configuration asked for port 0.
func (s *Server) Addr(id string) net.Addr {
	for _, r := range s.routes {
		if r.cfg.ID == id && r.ln != nil {
			return r.ln.Addr()
		}
	}
	return nil
}

// Serve accepts connections on every bound route until ctx ends; then it closes
// the listeners and every connection (held or spliced), withdraws the routes'
// claims and returns once every connection's goroutines are done.
func (s *Server) Serve(ctx context.Context) {
	var accepting sync.WaitGroup
	for _, r := range s.routes {
		if r.ln == nil {
			continue
		}
		accepting.Go(func() { r.accept() })
	}
	<-ctx.Done()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, r := range s.routes {
		if r.ln != nil {
			_ = r.ln.Close()
		}
		r.closeAll()
	}
	accepting.Wait()
	s.conns.Wait()
	for _, r := range s.routes {
		r.app.Release()
	}
}

// track counts a connection's goroutine, unless the server is closing.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns.Add(1)
	return true
}

// accept takes the route's connections until its listener closes.
func (r *route) accept() {
	var delay time.Duration
	for {
		c, err := r.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, most likely: wait a little, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			r.s.log.Error("tcp route: accept failed", "route", r.cfg.ID, "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if !r.s.track() {
			_ = c.Close()
			return
		}
		go func() {
			defer r.s.conns.Done()
			r.serve(c)
		}()
	}
}

// Close unbinds the ports and withdraws the claims of a server that Serve never
// ran (the node failed to start after Listen).
func (s *Server) Close() {
	for _, r := range s.routes {
		if r.ln != nil {
			_ = r.ln.Close()
		}
		r.app.Release()
	}
}

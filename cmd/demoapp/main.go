// Command demoapp is a small HTTP app that reaper's tests, benchmarks and demo run as a
// real process behind the gateway. Its flags make it behave like the apps reaper must
// cope with: a slow boot (--boot-delay), a memory footprint (--memory), slow answers
// (--latency), a crash or failed boot (--fail-after, exit status 3) and a process that
// ignores SIGTERM (--ignore-sigterm). Its endpoints cover what the proxy must carry:
// streamed uploads and downloads, long requests, streams and WebSockets.
//
// Exit status: 0 after a graceful stop (SIGTERM, SIGINT) or --help, 1 when it cannot
// listen, 2 for a bad command line, 3 for --fail-after.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// errFailAfter is returned by run when --fail-after fires; main exits with status 3.
var errFailAfter = errors.New("demoapp: failing as asked by --fail-after")

// wsDrainTimeout bounds how long run waits for WebSocket handlers after the HTTP
// server has stopped; their close handshake is itself bounded by the library (5s).
const wsDrainTimeout = 10 * time.Second

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, errUsage) {
		// A usage error has already been printed with the usage text.
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(exitCode(err))
}

// exitCode maps the result of run to the process exit status.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errFailAfter):
		return 3
	default:
		return 1
	}
}

// run is the whole program: it parses args, plays the boot, serves until ctx ends or a
// signal asks it to stop, then shuts down gracefully. It blocks until the server has
// stopped. It returns nil after a graceful stop or --help, an error wrapping errUsage
// for a bad command line, errFailAfter when --fail-after fires, and a listen error.
// Log lines go to stderr, each starting with "demoapp <name> pid <pid>".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	started := time.Now()
	opts, err := parseOptions(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	pid := os.Getpid()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "demoapp %s pid %d "+format+"\n", append([]any{opts.name, pid}, a...)...)
	}

	ctx, stopSignals := watchSignals(ctx, opts.ignoreSigterm, logf)
	defer stopSignals()

	// The fail timer starts with the process, so it can fire during the boot delay
	// (a failed boot) as well as after the port is open (a crash).
	var failC <-chan time.Time
	if opts.failAfter > 0 {
		t := time.NewTimer(opts.failAfter)
		defer t.Stop()
		failC = t.C
	}

	ballast := holdMemory(opts.memory)
	defer runtime.KeepAlive(ballast)
	if opts.memory > 0 {
		logf("holding %d bytes", opts.memory)
	}

	if listen, err := boot(ctx, opts, failC, logf); !listen {
		return err
	}
	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return fmt.Errorf("demoapp: listen: %w", err)
	}
	// Taken at once: the port accepts connections from here on.
	listening := time.Now()
	a := newApp(opts.name, pid, started, listening, opts.latency)
	return serve(ctx, ln, a, opts, failC, logf)
}

// boot plays the boot delay, during which the port stays closed. It reports whether
// to go on and listen; when not, it returns nil if ctx ended first (a stop while
// booting) and errFailAfter if --fail-after fired first (a failed boot).
func boot(ctx context.Context, opts options, failC <-chan time.Time, logf func(string, ...any)) (listen bool, err error) {
	if opts.bootDelay <= 0 {
		return true, nil
	}
	logf("booting, listening in %s", opts.bootDelay)
	t := time.NewTimer(opts.bootDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		logf("stopped while booting")
		return false, nil
	case <-failC:
		logf("failing while booting (--fail-after %s)", opts.failAfter)
		return false, errFailAfter
	case <-t.C:
		return true, nil
	}
}

// serve serves a on ln until the server fails, --fail-after fires or ctx ends, and
// blocks until the server has stopped. --fail-after plays a crash: the server closes
// at once, with no grace for in-flight requests, and serve returns errFailAfter. The
// end of ctx is a graceful stop (see shutdown), after which serve returns nil.
func serve(ctx context.Context, ln net.Listener, a *app, opts options, failC <-chan time.Time, logf func(string, ...any)) error {
	srv := &http.Server{
		Handler: a.routes(),
		// Bounded header reads; no write timeout, since /download, /slow and /stream
		// are long on purpose.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logf("listening on %s", ln.Addr())

	select {
	case err := <-serveErr:
		a.closeWebSockets()
		return fmt.Errorf("demoapp: serve: %w", err)
	case <-failC:
		// A crash: no grace for in-flight requests.
		logf("failing (--fail-after %s)", opts.failAfter)
		_ = srv.Close()
		<-serveErr
		a.closeWebSockets()
		return errFailAfter
	case <-ctx.Done():
	}

	logf("shutting down (%v)", context.Cause(ctx))
	shutdown(srv, serveErr, a, opts.shutdownTimeout, logf)
	return nil
}

// shutdown stops srv gracefully: it tells the WebSockets to go away (the server
// forgets hijacked connections), lets in-flight requests finish for up to timeout and
// then closes them, waits until Serve has returned on serveErr, and last gives the
// WebSocket handlers wsDrainTimeout to return.
func shutdown(srv *http.Server, serveErr <-chan error, a *app, timeout time.Duration, logf func(string, ...any)) {
	a.closeWebSockets()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logf("shutdown: in-flight requests still running after %s, closing them", timeout)
		_ = srv.Close()
	}
	<-serveErr
	if !a.waitWebSockets(wsDrainTimeout) {
		logf("websocket handlers still running after %s", wsDrainTimeout)
	}
	logf("stopped")
}

// watchSignals returns a context that ends on SIGINT, and on SIGTERM unless
// ignoreSigterm is set: then each SIGTERM is logged and otherwise ignored, so only
// SIGKILL (or SIGINT) stops the process. The returned stop function releases the
// signal handlers; it must be called once.
func watchSignals(parent context.Context, ignoreSigterm bool, logf func(string, ...any)) (context.Context, func()) {
	if !ignoreSigterm {
		return signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	}
	ctx, stopCtx := signal.NotifyContext(parent, syscall.SIGINT)
	// Asking for SIGTERM on a channel replaces its default action (exit).
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-terms:
				logf("ignoring SIGTERM")
			case <-done:
				return
			}
		}
	})
	return ctx, func() {
		signal.Stop(terms)
		close(done)
		wg.Wait()
		stopCtx()
	}
}

// holdMemory allocates n bytes and writes to every page, so the pages are resident and
// count in the process RSS (a fresh allocation alone maps zero pages lazily).
func holdMemory(n int64) []byte {
	if n <= 0 {
		return nil
	}
	b := make([]byte, n)
	page := os.Getpagesize()
	for i := 0; i < len(b); i += page {
		b[i] = 1
	}
	return b
}

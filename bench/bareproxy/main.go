// Command bareproxy is the benchmark's yardstick: the floor cost of any Go proxy
// hop. It is a bare httputil.ReverseProxy (Rewrite with SetURL) over an
// http.Transport whose idle pool is large enough that no request opens a
// connection, and nothing else: no logging, no headers of its own, no timeouts.
//
// Usage: bareproxy --listen 127.0.0.1:0 --target http://127.0.0.1:3001
//
// With --allow instead of --target it is the floor of a forward-auth server:
// every request gets an empty 200 with the header Reaper-Access: allow, the
// go-ahead docs/integrations.md's Caddy recipe waits for.
// With a tcp:// target (--target tcp://127.0.0.1:5432) it is a bare TCP
// forwarder instead (tcp.go): part T's yardstick.
//
// It writes "bareproxy listening on ADDR" to stderr once it accepts connections,
// and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
)

// idlePool is the number of idle upstream connections kept per host: far more
// than the benchmark's 64 concurrent clients.
const idlePool = 1024

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

// newProxy returns the bare proxy to target.
func newProxy(target *url.URL) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        idlePool,
			MaxIdleConnsPerHost: idlePool,
		},
	}
}

// run serves until ctx ends. It returns an error for a bad command line or a
// listener that fails.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bareproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "`address` to listen on")
	targetFlag := fs.String("target", "", "the backend `URL`")
	allow := fs.Bool("allow", false, "answer every request 200 with Reaper-Access: allow, proxying nothing (no --target)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var target *url.URL
	if !*allow {
		var err error
		target, err = url.Parse(*targetFlag)
		if err != nil || (target.Scheme != "http" && target.Scheme != "tcp") || target.Host == "" {
			return fmt.Errorf("--target %q is not an http:// or tcp:// URL", *targetFlag)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	var h http.Handler = allowAll{}
	switch {
	case target == nil:
	case target.Scheme == "tcp":
		fmt.Fprintf(stderr, "bareproxy listening on %s\n", ln.Addr())
		return serveTCP(ctx, ln, target.Host)
	default:
		h = newProxy(target)
	}
	srv := &http.Server{Handler: h}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "bareproxy listening on %s\n", ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	_ = srv.Close()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// allowAll is --allow's handler: the go-ahead of a forward-auth server, and
// nothing else.
type allowAll struct{}

func (allowAll) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header()["Reaper-Access"] = []string{"allow"}
	w.WriteHeader(http.StatusOK)
}

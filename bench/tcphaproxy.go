package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// HAProxy, when installed (Debian's haproxy), is part T's second yardstick:
// the forwarder production TCP setups run, splicing both ways (option
// splice-request and splice-response), in front of the same tcpsink. It says
// what a hop costs on this machine when the best C forwarder makes it: the
// bare Go forwarder could be a weak yardstick, HAProxy is not. Without it the
// part prints that it was not there and measures the rest.

// haproxyConfig is the forwarder: one TCP listener, splicing, to target.
func haproxyConfig(listen, target string) string {
	return fmt.Sprintf(`global
	maxconn 4000
defaults
	mode tcp
	timeout connect 5s
	timeout client 10m
	timeout server 10m
	option splice-request
	option splice-response
listen sink
	bind %s
	server sink %s
`, listen, target)
}

// startHAProxy starts haproxy in front of the sink, in the foreground (-db),
// if there is one on PATH.
func (n *tcpNode) startHAProxy(ctx context.Context, e *env) error {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		e.progressf("T: no haproxy on PATH (apt-get install haproxy): its yardstick is left out")
		return nil
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cfg := filepath.Join(e.tmp, "haproxy-tcp.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(addr, n.sinkAddr)), 0o644); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		return fmt.Errorf("bench: T: haproxy refused its configuration: %v: %s", err, out)
	}
	p, err := clusterenv.StartProcess(e.clean, "haproxy", []string{bin, "-db", "-f", cfg}, nil, filepath.Join(e.tmp, "haproxy-tcp.log"))
	if err != nil {
		return err
	}
	if err := awaitListening(ctx, addr, clusterenv.StartTimeout); err != nil {
		return fmt.Errorf("bench: T: haproxy: %w", err)
	}
	n.haproxy, n.haproxyAddr = p, addr
	return nil
}

// awaitListening dials addr until it accepts, for up to timeout.
func awaitListening(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: %w", addr, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

package main

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
)

// serveTCP is the yardstick of part T: the floor cost of any Go TCP hop. Each
// connection is dialled through to target and copied both ways with io.Copy
// between the two *net.TCPConn (splice(2) on Linux), each side's end of input
// passed on as a half-close, and nothing else: no hold, no count, no log. It
// serves until ctx ends.
func serveTCP(ctx context.Context, ln net.Listener, target string) error {
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		conns.Go(func() { forward(ctx, c.(*net.TCPConn), target) })
	}
}

// forward copies between client and a new connection to target until both
// directions ended (or ctx does).
func forward(ctx context.Context, client *net.TCPConn, target string) {
	defer client.Close()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return
	}
	app := up.(*net.TCPConn)
	defer app.Close()
	stop := context.AfterFunc(ctx, func() {
		_ = client.Close()
		_ = app.Close()
	})
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(app, client)
		_ = app.CloseWrite()
	})
	_, _ = io.Copy(client, app)
	_ = client.CloseWrite()
	wg.Wait()
}

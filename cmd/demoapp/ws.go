package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// wsReadLimit bounds one WebSocket message. The echo streams each message through,
// so the limit is about protocol sanity, not memory.
const wsReadLimit = 64 << 20

// wsTracker follows the WebSocket handlers. The HTTP server forgets a connection once
// it is hijacked, so a graceful stop must close and wait for these itself.
type wsTracker struct {
	closing context.Context // ends when the server starts shutting down
	close   context.CancelFunc
	wg      sync.WaitGroup
}

func (t *wsTracker) init() {
	t.closing, t.close = context.WithCancel(context.Background())
}

// closeWebSockets sends a "going away" close to every open WebSocket and to any that
// opens later. It does not block and may be called more than once.
func (a *app) closeWebSockets() { a.ws.close() }

// waitWebSockets blocks until every WebSocket handler has returned or timeout passes;
// it reports whether they all returned.
func (a *app) waitWebSockets(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		a.ws.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// handleWS echoes every message back with its type (text or binary), streaming it.
func (a *app) handleWS(w http.ResponseWriter, r *http.Request) {
	// Counted before the hijack: until then the server still tracks this request, so
	// the count cannot go up from zero after a graceful stop has begun waiting.
	a.ws.wg.Add(1)
	defer a.ws.wg.Done()
	// Any origin is accepted: demoapp runs behind the gateway under whatever host the
	// demo or a test gives it, and it holds nothing a cross-site page could steal.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the failed handshake
	}
	defer c.CloseNow()
	c.SetReadLimit(wsReadLimit)
	closed := make(chan struct{})
	stop := context.AfterFunc(a.ws.closing, func() {
		defer close(closed)
		_ = c.Close(websocket.StatusGoingAway, "demoapp shutting down")
	})
	defer func() {
		if !stop() {
			<-closed // the close handshake is running: let it finish (bounded by the library)
		}
	}()

	ctx := r.Context()
	for {
		typ, rd, err := c.Reader(ctx)
		if err != nil {
			return // closed by the peer, by shutdown, or broken
		}
		wr, err := c.Writer(ctx, typ)
		if err != nil {
			return
		}
		if _, err := io.Copy(wr, rd); err != nil {
			return
		}
		if err := wr.Close(); err != nil {
			return
		}
	}
}

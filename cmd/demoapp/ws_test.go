package main

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func dialWS(t *testing.T, ctx context.Context, baseURL string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(baseURL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake status %d", resp.StatusCode)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func TestWS_EchoesTextAndBinary(t *testing.T) {
	srv, _ := startApp(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c := dialWS(t, ctx, srv.URL)
	c.SetReadLimit(2 << 20)

	big := make([]byte, 1<<20) // larger than the library's default read limit of 32 KiB
	_, _ = rand.NewChaCha8([32]byte{2}).Read(big)
	msgs := []struct {
		typ  websocket.MessageType
		data []byte
	}{
		{websocket.MessageText, []byte("hello")},
		{websocket.MessageBinary, big},
		{websocket.MessageText, []byte("")},
		{websocket.MessageText, []byte("again")},
	}
	for i, m := range msgs {
		if err := c.Write(ctx, m.typ, m.data); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		typ, got, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if typ != m.typ || !bytes.Equal(got, m.data) {
			t.Errorf("message %d: got %v with %d bytes, want %v with %d bytes", i, typ, len(got), m.typ, len(m.data))
		}
	}
	if err := c.Close(websocket.StatusNormalClosure, "done"); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestWS_CloseWebSocketsSendsGoingAway(t *testing.T) {
	srv, a := startApp(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c := dialWS(t, ctx, srv.URL)
	// One echo proves the handler is in its loop before the close.
	if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}

	a.closeWebSockets()
	_, _, err := c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("read after close = %v, want close status going away", err)
	}
	if !a.waitWebSockets(10 * time.Second) {
		t.Error("the WebSocket handler did not return after the close")
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("timed out")
	}
}

package chrometest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeEndpoint is a DevTools endpoint that answers each command with reply(command) and, before the
// answer, sends the frames of events(command). It records the commands it got.
type fakeEndpoint struct {
	reply  func(m message) message
	events func(m message) []string
	got    chan message
}

func startFake(t *testing.T, f *fakeEndpoint) *conn {
	t.Helper()
	f.got = make(chan message, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			_, data, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			var m message
			if err := json.Unmarshal(data, &m); err != nil {
				t.Errorf("fake endpoint: bad frame %s", data)
				return
			}
			f.got <- m
			if f.events != nil {
				for _, ev := range f.events(m) {
					if ws.Write(r.Context(), websocket.MessageText, []byte(ev)) != nil {
						return
					}
				}
			}
			if f.reply == nil {
				continue // never answer
			}
			out, _ := json.Marshal(f.reply(m))
			if ws.Write(r.Context(), websocket.MessageText, out) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(ws)
	t.Cleanup(c.close)
	return c
}

func TestConn_CallMatchesAnswersAndErrors(t *testing.T) {
	c := startFake(t, &fakeEndpoint{reply: func(m message) message {
		if m.Method == "Bad.method" {
			r := message{ID: m.ID}
			r.Error = &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{-32601, "'Bad.method' wasn't found"}
			return r
		}
		res, _ := json.Marshal(map[string]any{"method": m.Method, "session": m.SessionID, "params": m.Params})
		return message{ID: m.ID, Result: res}
	}, events: func(message) []string {
		// Noise the read loop must skip: not JSON, and an answer to a command nobody sent.
		return []string{"not json", `{"id":999999,"result":{}}`}
	}})
	var got struct {
		Method  string          `json:"method"`
		Session string          `json:"session"`
		Params  json.RawMessage `json:"params"`
	}
	ctx := context.Background()
	if err := c.call(ctx, "S1", "Do.thing", map[string]int{"a": 1}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Method != "Do.thing" || got.Session != "S1" || string(got.Params) != `{"a":1}` {
		t.Errorf("answer = %+v", got)
	}
	if err := c.call(ctx, "", "Bad.method", nil, nil); !errors.Is(err, ErrCDP) || !strings.Contains(err.Error(), "wasn't found") {
		t.Errorf("error answer = %v, want ErrCDP with the browser's message", err)
	}
}

func TestConn_EventsGoToTheirSessionAndMethod(t *testing.T) {
	c := startFake(t, &fakeEndpoint{
		reply: func(m message) message { return message{ID: m.ID} },
		events: func(message) []string {
			return []string{
				`{"method":"Page.lifecycleEvent","sessionId":"other","params":{"name":"wrong session"}}`,
				`{"method":"Page.frameNavigated","sessionId":"S1","params":{"name":"wrong method"}}`,
				`{"method":"Page.lifecycleEvent","sessionId":"S1","params":{"name":"load"}}`,
			}
		},
	})
	events, stop := c.subscribe("S1", "Page.lifecycleEvent")
	defer stop()
	// The events are sent before the answer, so they are queued once call returns.
	if err := c.call(context.Background(), "S1", "Page.navigate", nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case raw := <-events:
		if !strings.Contains(string(raw), `"load"`) {
			t.Errorf("event = %s, want the load event of S1", raw)
		}
	default:
		t.Fatal("no event delivered")
	}
	select {
	case raw := <-events:
		t.Errorf("extra event %s", raw)
	default:
	}
}

func TestConn_CallEndsWithContextOrConnection(t *testing.T) {
	fake := &fakeEndpoint{} // never answers
	c := startFake(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.call(ctx, "", "Slow.thing", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call past its deadline = %v, want DeadlineExceeded", err)
	}

	errc := make(chan error, 1)
	go func() { errc <- c.call(context.Background(), "", "Slow.thing", nil, nil) }()
	// Close the connection once the fake has the command, so the call is pending.
	deadline := time.After(5 * time.Second)
	for n := 0; n < 2; n++ {
		select {
		case <-fake.got:
		case <-deadline:
			t.Fatal("fake endpoint got no command")
		}
	}
	c.close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("pending call on a closed connection = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending call did not end with the connection")
	}
	if err := c.call(context.Background(), "", "After.close", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call on a closed connection = %v, want ErrClosed", err)
	}
}

package chrometest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// ErrCDP means the browser answered a DevTools command with an error; ErrClosed that the connection to the
// browser is gone.
var (
	ErrCDP    = errors.New("chrometest: devtools command failed")
	ErrClosed = errors.New("chrometest: devtools connection closed")
)

// eventBuffer bounds the events queued for one subscriber. Subscribers are short-lived (one navigation);
// an event that does not fit is dropped rather than blocking the read loop.
const eventBuffer = 256

// message is a DevTools protocol frame: a command, its answer or an event.
type message struct {
	ID        int64           `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type subscriber struct {
	sessionID, method string
	ch                chan json.RawMessage
}

// conn is one WebSocket to the browser endpoint. Pages talk through it with flattened sessions, so a
// single read loop serves every page.
type conn struct {
	ws   *websocket.Conn
	done chan struct{} // closed when the read loop ends

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan message
	subs    map[*subscriber]struct{}
	err     error // why the read loop ended
}

func newConn(ws *websocket.Conn) *conn {
	c := &conn{
		ws:      ws,
		done:    make(chan struct{}),
		pending: make(map[int64]chan message),
		subs:    make(map[*subscriber]struct{}),
	}
	go c.readLoop()
	return c
}

func (c *conn) readLoop() {
	var err error
	defer func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	}()
	for {
		var data []byte
		_, data, err = c.ws.Read(context.Background())
		if err != nil {
			return
		}
		var m message
		if json.Unmarshal(data, &m) != nil {
			continue // not a protocol frame: nothing waits for it
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.pending[m.ID]; ok {
				delete(c.pending, m.ID)
				ch <- m // buffered 1, sent once
			}
		} else {
			for s := range c.subs {
				if s.method == m.Method && s.sessionID == m.SessionID {
					select {
					case s.ch <- m.Params:
					default:
					}
				}
			}
		}
		c.mu.Unlock()
	}
}

// call sends a command (to the browser when sessionID is empty, else to that page) and decodes its result
// into result, unless result is nil. It blocks until the answer, ctx's end or the connection's end.
func (c *conn) call(ctx context.Context, sessionID, method string, params, result any) error {
	if params == nil {
		params = struct{}{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("chrometest: encode %s: %w", method, err)
	}
	ch := make(chan message, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()

	frame, err := json.Marshal(message{ID: id, SessionID: sessionID, Method: method, Params: raw})
	if err != nil {
		return fmt.Errorf("chrometest: encode %s: %w", method, err)
	}
	if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		return fmt.Errorf("%w: send %s: %w", ErrClosed, method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%w: %s: %s (%d)", ErrCDP, method, m.Error.Message, m.Error.Code)
		}
		if result != nil && len(m.Result) > 0 {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("chrometest: decode %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("chrometest: %s: %w", method, ctx.Err())
	case <-c.done:
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%w: %s: %w", ErrClosed, method, err)
	}
}

// subscribe queues the params of every event named method of the session until stop is called.
func (c *conn) subscribe(sessionID, method string) (events <-chan json.RawMessage, stop func()) {
	s := &subscriber{sessionID: sessionID, method: method, ch: make(chan json.RawMessage, eventBuffer)}
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	return s.ch, func() {
		c.mu.Lock()
		delete(c.subs, s)
		c.mu.Unlock()
	}
}

// close ends the connection at once; the read loop then ends and pending calls fail with ErrClosed.
func (c *conn) close() {
	_ = c.ws.CloseNow()
	<-c.done
}

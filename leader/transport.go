package leader

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

const (
	// maxPendingHandshakes bounds the connections being authenticated at once. Beyond it, new connections
	// are closed at once: a flood of idle sockets must not hold goroutines or starve the real peers for long.
	maxPendingHandshakes = 64
	// acceptedQueue is how many authenticated connections may wait for the transport's Accept.
	acceptedQueue = 16
	// maxAcceptBackoff caps the pause after a failing Accept (for example when out of file descriptors).
	maxAcceptBackoff = time.Second
)

// authStream is the raft.StreamLayer of a node: TCP where every connection, in either direction, must pass
// the handshake of handshake.go before Raft sees it. With TLS, each connection is a TLS connection first
// (see TLS): a peer whose certificate the CAs did not sign is refused before any byte of the handshake, and
// the handshake and Raft's traffic run inside TLS.
//
// Handshakes of incoming connections run in their own goroutines (at most maxPendingHandshakes), so a slow
// or silent peer delays nobody else; Accept returns only connections that passed.
type authStream struct {
	ln        net.Listener
	advertise net.Addr
	secret    []byte
	id        string
	timeout   time.Duration
	tls       *TLS // nil: plain TCP
	log       *slog.Logger

	accepted chan net.Conn
	slots    chan struct{}
	closed   chan struct{}
	once     sync.Once
	wg       sync.WaitGroup

	mu      sync.Mutex
	pending map[net.Conn]struct{} // connections inside the handshake, closed by Close
}

var _ raft.StreamLayer = (*authStream)(nil)

// streamOptions configure an authStream.
type streamOptions struct {
	Advertise string // the address reported to Raft as ours
	Secret    []byte
	ID        string        // this node's id
	Timeout   time.Duration // bounds each handshake (TLS's and then ours, each)
	TLS       *TLS          // nil: plain TCP
	Log       *slog.Logger
}

// newAuthStream serves the handshake on ln in the background until Close.
func newAuthStream(ln net.Listener, o streamOptions) *authStream {
	s := &authStream{
		ln:        ln,
		advertise: advertisedAddr(o.Advertise),
		secret:    o.Secret,
		id:        o.ID,
		timeout:   o.Timeout,
		tls:       o.TLS,
		log:       o.Log,
		accepted:  make(chan net.Conn, acceptedQueue),
		slots:     make(chan struct{}, maxPendingHandshakes),
		closed:    make(chan struct{}),
		pending:   make(map[net.Conn]struct{}),
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

// Accept returns the next authenticated incoming connection. It blocks until one arrives or the stream is
// closed, in which case it returns net.ErrClosed.
func (s *authStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.accepted:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Dial connects to address and runs the handshakes as the dialer: TLS's, when the stream has TLS (the
// listener's certificate must name address's host), then ours. It blocks for at most timeout to connect
// plus the handshake timeouts. Errors wrap ErrHandshake when the peer could not be authenticated.
func (s *authStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	select {
	case <-s.closed:
		return nil, net.ErrClosed
	default:
	}
	d := net.Dialer{Timeout: timeout}
	raw, err := d.Dial("tcp", string(address))
	if err != nil {
		return nil, err
	}
	conn := raw
	if s.tls != nil {
		if conn, err = s.tls.dial(raw, string(address), s.timeout); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("dial %s: %w", address, err)
		}
	}
	if _, err := dialHandshake(conn, s.secret, s.id, s.timeout); err != nil {
		_ = conn.Close()
		if s.tls != nil {
			err = explainTLS(err)
		}
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	return conn, nil
}

// Close stops accepting, closes the listener, the connections still in the handshake and those not yet
// accepted, and waits for the background goroutines. Idempotent; returns the listener's close error once.
func (s *authStream) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closed)
		err = s.ln.Close()
		s.mu.Lock()
		for c := range s.pending {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		for {
			select {
			case c := <-s.accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return err
}

// Addr is the advertised address, the one other nodes dial.
func (s *authStream) Addr() net.Addr { return s.advertise }

func (s *authStream) acceptLoop() {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
			s.log.Warn("leader: raft accept failed", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-s.closed:
				return
			}
			continue
		}
		backoff = 0
		select {
		case s.slots <- struct{}{}:
		default:
			s.log.Warn("leader: refused raft connection", "remote_addr", conn.RemoteAddr().String(),
				"error", "too many connections in the handshake")
			_ = conn.Close()
			continue
		}
		if !s.track(conn) {
			<-s.slots
			_ = conn.Close()
			return
		}
		s.wg.Add(1)
		go s.authenticate(conn)
	}
}

// authenticate runs the listener's handshakes on raw (TLS's when the stream has TLS, then ours) and queues
// the connection for Accept, or closes it and logs one line.
func (s *authStream) authenticate(raw net.Conn) {
	defer s.wg.Done()
	defer func() { <-s.slots }()
	conn, peerID, err := s.handshake(raw)
	s.untrack(raw)
	if err != nil {
		_ = raw.Close()
		if s.isClosed() {
			return
		}
		args := []any{"remote_addr", raw.RemoteAddr().String(), "error", err}
		if peerID != "" {
			args = append(args, "claimed_id", peerID)
		}
		s.log.Warn("leader: refused raft connection", args...)
		return
	}
	select {
	case s.accepted <- conn:
	case <-s.closed:
		_ = conn.Close()
	}
}

// handshake runs the listener's handshakes on raw and returns the connection Raft may use and the peer's
// id (claimed, possibly before failing, for the log line; authenticated only when err is nil).
func (s *authStream) handshake(raw net.Conn) (net.Conn, string, error) {
	conn := raw
	if s.tls != nil {
		var err error
		if conn, err = s.tls.accept(raw, s.timeout); err != nil {
			return nil, "", err
		}
	}
	peerID, err := acceptHandshake(conn, s.secret, s.id, s.timeout)
	return conn, peerID, err
}

// track records conn as inside the handshake; false when the stream is already closed.
func (s *authStream) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed() {
		return false
	}
	s.pending[conn] = struct{}{}
	return true
}

func (s *authStream) untrack(conn net.Conn) {
	s.mu.Lock()
	delete(s.pending, conn)
	s.mu.Unlock()
}

func (s *authStream) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// advertisedAddr is a net.Addr for a host:port string, without resolving it: the advertised address is
// what other nodes dial, not something this node binds.
type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

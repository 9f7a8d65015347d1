package leader

import (
	"errors"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func newTestStream(t *testing.T, secret []byte, id string, timeout time.Duration) (*authStream, *logtest.Buffer) {
	t.Helper()
	return newTLSStream(t, secret, id, timeout, nil)
}

// newTLSStream is newTestStream with tls (nil: plain TCP).
func newTLSStream(t *testing.T, secret []byte, id string, timeout time.Duration, tls *TLS) (*authStream, *logtest.Buffer) {
	t.Helper()
	logs := &logtest.Buffer{}
	ln := listen(t)
	s := newAuthStream(ln, streamOptions{
		Advertise: ln.Addr().String(), Secret: secret, ID: id, Timeout: timeout, TLS: tls, Log: logs.Logger(slog.LevelInfo),
	})
	t.Cleanup(func() { _ = s.Close() })
	return s, logs
}

// acceptOne returns the next accepted connection, or nil when none comes within d.
func acceptOne(s *authStream, d time.Duration) net.Conn {
	got := make(chan net.Conn, 1)
	go func() {
		c, err := s.Accept()
		if err != nil {
			c = nil
		}
		got <- c
	}()
	select {
	case c := <-got:
		return c
	case <-time.After(d):
		return nil
	}
}

func TestAuthStream_AcceptsOnlyPeersWithTheSecret(t *testing.T) {
	a, logs := newTestStream(t, testSecret, "a", time.Second)
	b, _ := newTestStream(t, testSecret, "b", time.Second)
	stranger, _ := newTestStream(t, strangerSecret, "x", time.Second)

	if _, err := stranger.Dial(raft.ServerAddress(a.Addr().String()), time.Second); !errors.Is(err, ErrHandshake) {
		t.Fatalf("stranger dial = %v, want ErrHandshake", err)
	}
	testwait.For(t, 5*time.Second, "the refusal to be logged", func() bool { return logs.Lines("refused raft connection") == 1 })
	line := logs.String()
	if !strings.Contains(line, "remote_addr=127.0.0.1:") || !strings.Contains(line, "claimed_id=x") {
		t.Errorf("refusal line lacks the remote address or claimed id: %s", line)
	}
	if strings.Contains(line, string(testSecret)) || strings.Contains(line, string(strangerSecret)) {
		t.Errorf("refusal line contains a secret: %s", line)
	}

	conn, err := b.Dial(raft.ServerAddress(a.Addr().String()), time.Second)
	if err != nil {
		t.Fatalf("dial with the secret: %v", err)
	}
	defer conn.Close()
	in := acceptOne(a, 5*time.Second)
	if in == nil {
		t.Fatal("authenticated connection not accepted")
	}
	defer in.Close()
	if _, err := conn.Write([]byte{42}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(in, buf); err != nil || buf[0] != 42 {
		t.Fatalf("read %v, %v", buf, err)
	}
	// The stranger's handshake ended (logged) before b dialled, so nothing else can be queued for Accept.
	if n := len(a.accepted); n != 0 {
		t.Fatalf("%d more connections queued for Accept", n)
	}
}

func TestAuthStream_SilentPeerDoesNotBlockOthers(t *testing.T) {
	// A minute-long handshake deadline: if a silent peer blocked accepting, the test would time out.
	a, _ := newTestStream(t, testSecret, "a", time.Minute)
	b, _ := newTestStream(t, testSecret, "b", time.Minute)
	silent, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	conn, err := b.Dial(raft.ServerAddress(a.Addr().String()), time.Second)
	if err != nil {
		t.Fatalf("dial while a silent peer is pending: %v", err)
	}
	defer conn.Close()
	in := acceptOne(a, 5*time.Second)
	if in == nil {
		t.Fatal("not accepted while a silent peer is pending")
	}
	_ = in.Close()

	// Close ends the pending handshake at once: the silent peer sees its connection closed.
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("silent peer read %v, want EOF after Close", err)
	}
}

func TestAuthStream_SlowAndGarbagePeersAreRefusedAndLogged(t *testing.T) {
	a, logs := newTestStream(t, testSecret, "a", 150*time.Millisecond)
	slow, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	garbage, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	if _, err := garbage.Write([]byte("GET / HTTP/1.1\r\n\r\n" + strings.Repeat("A", 40))); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "both refusals logged", func() bool { return logs.Lines("refused raft connection") == 2 })
	if !strings.Contains(logs.String(), "timeout") || !strings.Contains(logs.String(), "unsupported handshake version") {
		t.Errorf("refusals do not say why:\n%s", logs)
	}
	for _, c := range []net.Conn{slow, garbage} {
		// The listener closed it: EOF, or a reset when our unread bytes were discarded; not a timeout.
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("refused connection left open: %v", err)
		}
	}
}

func TestAuthStream_CloseUnblocksAcceptAndDial(t *testing.T) {
	a, _ := newTestStream(t, testSecret, "a", time.Second)
	accepted := make(chan error, 1)
	go func() {
		_, err := a.Accept()
		accepted <- err
	}()
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still blocked after Close")
	}
	if _, err := a.Dial("127.0.0.1:1", time.Second); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Dial after Close = %v", err)
	}
	if a.Addr().Network() != "tcp" || a.Addr().String() == "" {
		t.Fatalf("Addr = %v", a.Addr())
	}
}

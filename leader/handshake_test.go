package leader

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (dialer, listener net.Conn) {
	t.Helper()
	ln := listen(t)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	l := <-accepted
	if l == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = d.Close(); _ = l.Close() })
	return d, l
}

type handshakeResult struct {
	peerID string
	err    error
}

// acceptAsync runs the listener's side in a goroutine.
func acceptAsync(conn net.Conn, secret []byte, id string, timeout time.Duration) <-chan handshakeResult {
	res := make(chan handshakeResult, 1)
	go func() {
		peer, err := acceptHandshake(conn, secret, id, timeout)
		res <- handshakeResult{peer, err}
	}()
	return res
}

func TestHandshake_SameSecretAuthenticatesBothSides(t *testing.T) {
	d, l := tcpPair(t)
	res := acceptAsync(l, testSecret, "listener-1", time.Second)
	peer, err := dialHandshake(d, testSecret, "dialer-1", time.Second)
	if err != nil || peer != "listener-1" {
		t.Fatalf("dialer: peer %q, err %v", peer, err)
	}
	r := <-res
	if r.err != nil || r.peerID != "dialer-1" {
		t.Fatalf("listener: peer %q, err %v", r.peerID, r.err)
	}
	// The connection is usable afterwards, in both directions, with nothing left over from the handshake.
	go func() { _, _ = d.Write([]byte("ping")) }()
	buf := make([]byte, 4)
	if _, err := l.Read(buf); err != nil || string(buf) != "ping" {
		t.Fatalf("after handshake read %q, %v", buf, err)
	}
}

func TestHandshake_WrongSecretRefusedOnBothSides(t *testing.T) {
	d, l := tcpPair(t)
	res := acceptAsync(l, testSecret, "listener-1", time.Second)
	_, err := dialHandshake(d, strangerSecret, "dialer-1", time.Second)
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "listener did not prove") {
		t.Fatalf("dialer with the wrong secret: %v", err)
	}
	_ = d.Close() // as the stream layer does
	r := <-res
	if !errors.Is(r.err, ErrHandshake) || r.peerID != "dialer-1" {
		t.Fatalf("listener: peer %q, err %v", r.peerID, r.err)
	}
	for _, e := range []error{err, r.err} {
		if strings.Contains(e.Error(), string(testSecret)) || strings.Contains(e.Error(), string(strangerSecret)) {
			t.Fatalf("error mentions a secret: %v", e)
		}
	}
}

// A dialer that lies about its proof (here: a proof made with another secret, after a correct hello) is
// refused by the listener itself, not only by hanging up.
func TestHandshake_ListenerChecksTheDialerProof(t *testing.T) {
	d, l := tcpPair(t)
	res := acceptAsync(l, testSecret, "listener-1", time.Second)
	nonceD := bytes.Repeat([]byte{7}, nonceSize)
	if _, err := d.Write(hello(nonceD, "mallory", nil)); err != nil {
		t.Fatal(err)
	}
	nonceL, _, err := readHello(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(make([]byte, macSize)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Write(proof(strangerSecret, roleDialer, nonceD, nonceL, "mallory", "listener-1")); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if !errors.Is(r.err, ErrHandshake) || !strings.Contains(r.err.Error(), "dialer did not prove") {
		t.Fatalf("listener accepted a wrong proof: %v", r.err)
	}
}

// teeConn records what is written through it.
type teeConn struct {
	net.Conn
	mu      sync.Mutex
	written bytes.Buffer
}

func (c *teeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.written.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func TestHandshake_ReplayedExchangeRefused(t *testing.T) {
	d, l := tcpPair(t)
	res := acceptAsync(l, testSecret, "listener-1", time.Second)
	rec := &teeConn{Conn: d}
	if _, err := dialHandshake(rec, testSecret, "dialer-1", time.Second); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.err != nil {
		t.Fatal(r.err)
	}

	// Replaying everything the genuine dialer sent, each part when the genuine
	// dialer sent it, fails: the listener's nonce is new. (All at once, it is
	// refused earlier: a dialer sends nothing before the listener's hello.)
	d2, l2 := tcpPair(t)
	res2 := acceptAsync(l2, testSecret, "listener-1", time.Second)
	sent := rec.written.Bytes()
	helloLen := helloHeaderSize + len("dialer-1")
	if _, err := d2.Write(sent[:helloLen]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readHello(d2); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(d2, make([]byte, macSize)); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Write(sent[helloLen:]); err != nil {
		t.Fatal(err)
	}
	if r := <-res2; !errors.Is(r.err, ErrHandshake) || !strings.Contains(r.err.Error(), "dialer did not prove") {
		t.Fatalf("replayed handshake: %v", r.err)
	}
}

func TestHandshake_GarbageRefused(t *testing.T) {
	long := append([]byte{handshakeVersion}, bytes.Repeat([]byte{1}, nonceSize)...)
	long = append(long, 255) // id length beyond maxIDLen: refused before reading it
	for name, input := range map[string][]byte{
		"http request":   []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("A", 64)),
		"oversize id":    long,
		"empty id":       append(append([]byte{handshakeVersion}, make([]byte, nonceSize)...), 0),
		"future version": append([]byte{9}, make([]byte, 64)...),
	} {
		t.Run(name, func(t *testing.T) {
			d, l := tcpPair(t)
			res := acceptAsync(l, testSecret, "listener-1", 5*time.Second)
			if _, err := d.Write(input); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-res:
				if !errors.Is(r.err, ErrHandshake) {
					t.Fatalf("garbage accepted: %v", r.err)
				}
			case <-time.After(4 * time.Second):
				t.Fatal("garbage was not refused before the handshake deadline")
			}
		})
	}
}

func TestHandshake_DialerRefusesGarbageListener(t *testing.T) {
	d, l := tcpPair(t)
	go func() { _, _ = l.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n" + strings.Repeat("x", 100))) }()
	if _, err := dialHandshake(d, testSecret, "dialer-1", time.Second); !errors.Is(err, ErrHandshake) {
		t.Fatalf("dialer accepted garbage: %v", err)
	}
}

func TestHandshake_SlowPeerHitsDeadline(t *testing.T) {
	const timeout = 150 * time.Millisecond
	t.Run("silent dialer", func(t *testing.T) {
		_, l := tcpPair(t)
		start := time.Now()
		_, err := acceptHandshake(l, testSecret, "listener-1", timeout)
		if !errors.Is(err, ErrHandshake) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("silent dialer: %v", err)
		}
		if elapsed := time.Since(start); elapsed < timeout || elapsed > 5*time.Second {
			t.Fatalf("gave up after %s, want about %s", elapsed, timeout)
		}
	})
	t.Run("silent listener", func(t *testing.T) {
		d, _ := tcpPair(t)
		_, err := dialHandshake(d, testSecret, "dialer-1", timeout)
		if !errors.Is(err, ErrHandshake) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("silent listener: %v", err)
		}
	})
	t.Run("dialer stalls after hello", func(t *testing.T) {
		d, l := tcpPair(t)
		if _, err := d.Write(hello(make([]byte, nonceSize), "slow", nil)); err != nil {
			t.Fatal(err)
		}
		_, err := acceptHandshake(l, testSecret, "listener-1", timeout)
		if !errors.Is(err, ErrHandshake) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("stalled dialer: %v", err)
		}
	})
}

func TestProof_BindsEveryField(t *testing.T) {
	nD, nL := bytes.Repeat([]byte{1}, nonceSize), bytes.Repeat([]byte{2}, nonceSize)
	base := proof(testSecret, roleDialer, nD, nL, "a", "b")
	for name, other := range map[string][]byte{
		"secret":   proof(strangerSecret, roleDialer, nD, nL, "a", "b"),
		"role":     proof(testSecret, roleListener, nD, nL, "a", "b"),
		"nonces":   proof(testSecret, roleDialer, nL, nD, "a", "b"),
		"ids":      proof(testSecret, roleDialer, nD, nL, "b", "a"),
		"boundary": proof(testSecret, roleDialer, nD, nL, "ab", ""),
	} {
		if bytes.Equal(base, other) {
			t.Errorf("changing %s gives the same proof", name)
		}
	}
}

// A dialer that gave up waiting (this node was paused: SIGSTOP, then SIGCONT,
// answers the connections queued meanwhile) had hung up before this node's
// hello: the error says so, not "another cluster secret". A dialer with
// another secret hangs up after this node's proof: that error says so.
func TestHandshake_ADialerThatGaveUpIsNotTakenForAnotherSecret(t *testing.T) {
	d, l := tcpPair(t)
	nonce, _ := newNonce()
	if _, err := d.Write(hello(nonce, "dialer-1", nil)); err != nil {
		t.Fatal(err)
	}
	_ = d.Close() // its handshake timeout passed while this node was paused
	peer, err := acceptHandshake(l, testSecret, "listener-1", time.Second)
	if !errors.Is(err, ErrHandshake) || peer != "dialer-1" {
		t.Fatalf("listener: peer %q, err %v", peer, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "had hung up before this node answered") || strings.Contains(msg, "secret") {
		t.Errorf("a dialer that gave up waiting: %q; want it said that it hung up before the answer, nothing of a secret", msg)
	}

	d, l = tcpPair(t)
	res := acceptAsync(l, testSecret, "listener-1", time.Second)
	if _, err := dialHandshake(d, strangerSecret, "dialer-2", time.Second); err == nil {
		t.Fatal("a dialer with another secret was accepted")
	}
	_ = d.Close()
	r := <-res
	if r.err == nil || !strings.Contains(r.err.Error(), "another cluster secret") {
		t.Errorf("a dialer with another secret: %v; want it said", r.err)
	}
}

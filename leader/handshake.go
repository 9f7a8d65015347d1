package leader

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// The handshake that opens every Raft connection. Both sides prove knowledge of the cluster secret without
// sending it, over nonces chosen by both, so a recorded exchange cannot be replayed:
//
//	dialer   → listener: version(1) nonceD(32) idLen(1) dialerID
//	listener → dialer:   version(1) nonceL(32) idLen(1) listenerID  HMAC(secret, "listener", nonceD, nonceL, listenerID, dialerID)
//	dialer   → listener: HMAC(secret, "dialer", nonceD, nonceL, dialerID, listenerID)
//	listener → dialer:   ack(1)
//
// The role label keeps one side's proof from being reflected back as the other's. Every read has a fixed
// or length-prefixed size bounded by maxIDLen, and the whole exchange runs under one deadline.
const (
	handshakeVersion        byte = 1
	handshakeAck            byte = 0x6b
	nonceSize                    = 32
	macSize                      = sha256.Size
	helloHeaderSize              = 1 + nonceSize + 1
	defaultHandshakeTimeout      = 5 * time.Second
	roleDialer                   = "dialer"
	roleListener                 = "listener"
	handshakeLabel               = "reaper raft handshake v1"
	// tlsHandshakeRecord is the first byte a TLS client sends: a peer with cluster.tls dialled a node without.
	tlsHandshakeRecord byte = 0x16
)

// ErrHandshake is wrapped by every error of the connection handshake: the peer did not prove the cluster
// secret, sent something malformed, or was too slow.
var ErrHandshake = errors.New("leader: raft handshake refused")

// dialHandshake runs the dialer's side on conn. It returns the id the listener claimed, which is
// authenticated only when err is nil. It blocks until done or until timeout; it clears the deadline on return.
func dialHandshake(conn net.Conn, secret []byte, id string, timeout time.Duration) (peerID string, err error) {
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", fmt.Errorf("%w: set deadline: %w", ErrHandshake, err)
	}
	defer func() {
		if cerr := conn.SetDeadline(time.Time{}); cerr != nil && err == nil {
			err = fmt.Errorf("%w: clear deadline: %w", ErrHandshake, cerr)
		}
	}()

	nonceD, err := newNonce()
	if err != nil {
		return "", err
	}
	if _, err := conn.Write(hello(nonceD, id, nil)); err != nil {
		return "", fmt.Errorf("%w: send hello: %w", ErrHandshake, err)
	}
	nonceL, peerID, err := readHello(conn)
	if err != nil {
		return "", fmt.Errorf("%w: read listener hello: %w", ErrHandshake, err)
	}
	var got [macSize]byte
	if _, err := io.ReadFull(conn, got[:]); err != nil {
		return peerID, fmt.Errorf("%w: read listener proof: %w", ErrHandshake, err)
	}
	want := proof(secret, roleListener, nonceD, nonceL, peerID, id)
	if !hmac.Equal(got[:], want) {
		return peerID, fmt.Errorf("%w: listener did not prove the cluster secret", ErrHandshake)
	}
	if _, err := conn.Write(proof(secret, roleDialer, nonceD, nonceL, id, peerID)); err != nil {
		return peerID, fmt.Errorf("%w: send proof: %w", ErrHandshake, err)
	}
	var ack [1]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		return peerID, fmt.Errorf("%w: listener refused our proof: %w", ErrHandshake, err)
	}
	if ack[0] != handshakeAck {
		return peerID, fmt.Errorf("%w: unexpected acknowledgement 0x%02x", ErrHandshake, ack[0])
	}
	return peerID, nil
}

// acceptHandshake runs the listener's side on conn. It returns the id the dialer claimed (possibly before
// failing, for the log line), authenticated only when err is nil. It blocks until done or until timeout;
// it clears the deadline on return.
func acceptHandshake(conn net.Conn, secret []byte, id string, timeout time.Duration) (peerID string, err error) {
	deadline := time.Now().Add(timeout)
	if err := conn.SetDeadline(deadline); err != nil {
		return "", fmt.Errorf("%w: set deadline: %w", ErrHandshake, err)
	}
	defer func() {
		if cerr := conn.SetDeadline(time.Time{}); cerr != nil && err == nil {
			err = fmt.Errorf("%w: clear deadline: %w", ErrHandshake, cerr)
		}
	}()

	nonceD, peerID, err := readHello(conn)
	if err != nil {
		return "", fmt.Errorf("%w: read dialer hello: %w", ErrHandshake, err)
	}
	if err := stillWaiting(conn, deadline); err != nil {
		return peerID, err
	}
	nonceL, err := newNonce()
	if err != nil {
		return peerID, err
	}
	if _, err := conn.Write(hello(nonceL, id, proof(secret, roleListener, nonceD, nonceL, id, peerID))); err != nil {
		return peerID, fmt.Errorf("%w: send hello: %w", ErrHandshake, err)
	}
	var got [macSize]byte
	if _, err := io.ReadFull(conn, got[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// A dialer with another secret hangs up here, after checking our
			// proof. (One that gave up waiting hung up before: stillWaiting.)
			return peerID, fmt.Errorf("%w: dialer hung up after this node's proof, without proving the cluster secret (another cluster secret?): %w", ErrHandshake, err)
		}
		return peerID, fmt.Errorf("%w: read dialer proof: %w", ErrHandshake, err)
	}
	want := proof(secret, roleDialer, nonceD, nonceL, peerID, id)
	if !hmac.Equal(got[:], want) {
		return peerID, fmt.Errorf("%w: dialer did not prove the cluster secret", ErrHandshake)
	}
	if _, err := conn.Write([]byte{handshakeAck}); err != nil {
		return peerID, fmt.Errorf("%w: send acknowledgement: %w", ErrHandshake, err)
	}
	return peerID, nil
}

// peekWait is how long stillWaiting looks for a dialer's hang-up.
const peekWait = time.Millisecond

// stillWaiting checks, before the listener answers, that the dialer still waits
// for that answer: it sends nothing more until then, so a read finds either
// nothing (it waits) or its hang-up. A dialer hangs up there when it waited
// longer than its handshake timeout: this node was paused (SIGSTOP, a frozen VM)
// or too slow to accept, and answers connections queued while it was. Without
// this check the hang-up showed later, after this node's proof, where it read as
// a dialer with another cluster secret. deadline is the handshake's, put back.
func stillWaiting(conn net.Conn, deadline time.Time) error {
	if err := conn.SetReadDeadline(time.Now().Add(peekWait)); err != nil {
		return fmt.Errorf("%w: set deadline: %w", ErrHandshake, err)
	}
	var b [1]byte
	n, err := conn.Read(b[:])
	if derr := conn.SetReadDeadline(deadline); derr != nil {
		return fmt.Errorf("%w: set deadline: %w", ErrHandshake, derr)
	}
	switch {
	case n > 0:
		return fmt.Errorf("%w: dialer sent data before this node's hello", ErrHandshake)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil // it waits
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%w: dialer had hung up before this node answered its hello: it waited longer than its handshake timeout (was this node paused, or too slow to accept?)", ErrHandshake)
	case err != nil:
		return fmt.Errorf("%w: read dialer: %w", ErrHandshake, err)
	}
	return nil
}

// hello encodes version, nonce and id, followed by mac when non-nil. One buffer, one write.
func hello(nonce []byte, id string, mac []byte) []byte {
	b := make([]byte, 0, helloHeaderSize+len(id)+len(mac))
	b = append(b, handshakeVersion)
	b = append(b, nonce...)
	b = append(b, byte(len(id)))
	b = append(b, id...)
	return append(b, mac...)
}

// readHello reads version, nonce and id; the id length is checked against maxIDLen before it is read.
func readHello(r io.Reader) (nonce []byte, id string, err error) {
	var head [helloHeaderSize]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, "", err
	}
	if head[0] == tlsHandshakeRecord {
		return nil, "", fmt.Errorf("unsupported handshake version %d (a TLS handshake: is cluster.tls set on this node too?)", head[0])
	}
	if head[0] != handshakeVersion {
		return nil, "", fmt.Errorf("unsupported handshake version %d", head[0])
	}
	n := int(head[helloHeaderSize-1])
	if n == 0 || n > maxIDLen {
		return nil, "", fmt.Errorf("node id length %d out of range 1..%d", n, maxIDLen)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, "", err
	}
	return head[1 : 1+nonceSize], string(buf), nil
}

// proof is the HMAC-SHA256 a side of the given role sends: over both nonces, its own id and the peer's id.
// Every variable-length field is length-prefixed so that no two inputs encode the same.
func proof(secret []byte, role string, nonceD, nonceL []byte, selfID, peerID string) []byte {
	m := hmac.New(sha256.New, secret)
	for _, field := range [][]byte{[]byte(handshakeLabel), []byte(role), nonceD, nonceL, []byte(selfID), []byte(peerID)} {
		writeField(m, field)
	}
	return m.Sum(nil)
}

func writeField(h hash.Hash, b []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	h.Write(n[:])
	h.Write(b)
}

func newNonce() ([]byte, error) {
	b := make([]byte, nonceSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("%w: nonce: %w", ErrHandshake, err)
	}
	return b, nil
}

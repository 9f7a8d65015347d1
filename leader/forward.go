package leader

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Internal calls between nodes (a wake ask forwarded to the leader, a membership
// change, an admin write a follower forwards) go to a peer's API address, its
// admin listener, under /internal/. They are signed with the cluster secret,
// which never travels itself: the header carries the time, a random nonce and an
// HMAC-SHA256 of the method, the path, the query, the time, the nonce, the id of
// the node the call is for (HeaderTarget) and the body's SHA-256. A node takes a
// call only if it is for itself, signed within SignatureWindow of its clock, and
// its nonce was not seen before (nonces.go): a captured call cannot be replayed,
// to the node it was for or to another one, even within the window. (A captured
// "kill switch on", replayed after the operator turned it off, would turn it
// back on.) When the cluster has TLS, internal calls also go over HTTPS, with the
// calling node's certificate: the signature still proves the cluster secret, and
// TLS keeps the call private and proves both hosts (see TLS).

// HeaderSignature is the header that carries an internal call's signature:
// "<unix milliseconds>:<nonce>:<HMAC in hex>".
const HeaderSignature = "X-Reaper-Cluster-Signature"

// HeaderTarget is the header that names the node an internal call is for (its
// id); the signature covers it.
const HeaderTarget = "X-Reaper-Cluster-Target"

// SignatureWindow is how far from the receiver's clock a signed time may be.
const SignatureWindow = 60 * time.Second

// maxSignedBody bounds the body of an internal call.
const maxSignedBody = 1 << 20

// ErrNoLeader is returned by Forward when no leader is known (an election is under
// way, or this node is cut off).
var ErrNoLeader = errors.New("leader: no leader known")

// Sign sets the signature of an internal call for the node target, whose body
// is body, on req, with a fresh random nonce: every call signed is another.
func Sign(req *http.Request, body, secret []byte, target string, now time.Time) {
	var n [16]byte
	rand.Read(n[:]) // never fails (crypto/rand)
	ts, nonce := strconv.FormatInt(now.UnixMilli(), 10), hex.EncodeToString(n[:])
	req.Header.Set(HeaderTarget, target)
	req.Header.Set(HeaderSignature, ts+":"+nonce+":"+mac(secret, req, ts, nonce, target, body))
}

// Verify reports whether req carries a valid signature made with secret, for
// the node self, within SignatureWindow of now. It reads the body (at most 1
// MiB) to check it, and puts it back for the handler. It does not remember the
// call: the API refuses a nonce it saw already (API.Internal).
func Verify(req *http.Request, secret []byte, self string, now time.Time) bool {
	_, ok := verify(req, secret, self, now)
	return ok
}

// signed is what a valid signature says of its call.
type signed struct {
	at    time.Time
	nonce string
}

func verify(req *http.Request, secret []byte, self string, now time.Time) (signed, bool) {
	parts := strings.Split(req.Header.Get(HeaderSignature), ":")
	if len(parts) != 3 || len(parts[1]) != 32 || req.Header.Get(HeaderTarget) != self {
		return signed{}, false
	}
	ts, nonce, sig := parts[0], parts[1], parts[2]
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return signed{}, false
	}
	at := time.UnixMilli(ms)
	if d := now.Sub(at); d > SignatureWindow || d < -SignatureWindow {
		return signed{}, false
	}
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(io.LimitReader(req.Body, maxSignedBody+1))
		req.Body.Close()
		if err != nil || len(body) > maxSignedBody {
			return signed{}, false
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if !hmac.Equal([]byte(sig), []byte(mac(secret, req, ts, nonce, self, body))) {
		return signed{}, false
	}
	return signed{at: at, nonce: nonce}, true
}

func mac(secret []byte, req *http.Request, ts, nonce, target string, body []byte) string {
	sum := sha256.Sum256(body)
	h := hmac.New(sha256.New, secret)
	io.WriteString(h, "reaper-internal-2\n"+req.Method+"\n"+req.URL.Path+"\n"+req.URL.RawQuery+"\n"+ts+"\n"+nonce+"\n"+target+"\n")
	h.Write(sum[:])
	return hex.EncodeToString(h.Sum(nil))
}

// callTimeout bounds internal calls: they are small and a peer that does not answer quickly is treated as
// unreachable.
const callTimeout = 5 * time.Second

// caller makes a node's signed internal calls: over HTTPS with the node's certificate when the cluster has
// TLS (the peer's certificate must then name the host of its API address), over HTTP otherwise.
type caller struct {
	secret []byte
	scheme string
	client *http.Client
	// answered is when each API address last answered a call (any status), for
	// the last contact that the probe of an unreachable member reports.
	answered sync.Map // string → time.Time
}

func newCaller(secret []byte, t *TLS) *caller {
	c := &caller{secret: secret, scheme: "http", client: &http.Client{Timeout: callTimeout}}
	if t != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = t.clientConfig("") // the transport names the URL's host
		c.scheme, c.client.Transport = "https", tr
	}
	return c
}

// Forward sends a signed internal call to the current leader's API address and
// returns its answer's status and body (bounded to 1 MiB). It returns ErrNoLeader
// when no leader is known, and an error when the call fails; the caller decides
// whether that matters (a stored wake ask is handled by the next pass anyway).
func (n *Node) Forward(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	id, addr, ok := n.Leader()
	if !ok || addr == "" {
		return 0, nil, ErrNoLeader
	}
	return n.Call(ctx, id, addr, method, path, body)
}

// Call sends a signed internal call to the node id at apiAddr (host:port), over
// HTTPS when the cluster has TLS, and returns its answer's status and body
// (bounded to 1 MiB). The call is signed for id: another node refuses it (421).
// It blocks for 5 s at most.
func (n *Node) Call(ctx context.Context, id, apiAddr, method, path string, body []byte) (int, []byte, error) {
	return n.caller.call(ctx, id, apiAddr, method, path, body)
}

func (c *caller) call(ctx context.Context, target, apiAddr, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+apiAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	Sign(req, body, c.secret, target, time.Now())
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("leader: internal call to %s: %w", apiAddr, err)
	}
	c.answered.Store(apiAddr, time.Now())
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("leader: internal call to %s: %w", apiAddr, err)
	}
	return resp.StatusCode, out, nil
}

package leader

import (
	"bytes"
	"context"
	"crypto/hmac"
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
// change) go to a peer's API address, its admin listener, under /internal/. They
// are signed with the cluster secret, which never travels itself: the header
// carries the time and an HMAC-SHA256 of the method, the path, the query, the time
// and the body's SHA-256. A signature is valid for SignatureWindow around the
// receiver's clock; within it, a replay can only repeat the very same call, which
// every internal call tolerates (asks and membership changes are idempotent).
// When the cluster has TLS, internal calls also go over HTTPS, with the calling
// node's certificate: the signature still proves the cluster secret, and TLS keeps
// the call private and proves both hosts (see TLS).

// HeaderSignature is the header that carries an internal call's signature.
const HeaderSignature = "X-Reaper-Cluster-Signature"

// SignatureWindow is how far from the receiver's clock a signed time may be.
const SignatureWindow = 60 * time.Second

// maxSignedBody bounds the body of an internal call.
const maxSignedBody = 1 << 20

// ErrNoLeader is returned by Forward when no leader is known (an election is under
// way, or this node is cut off).
var ErrNoLeader = errors.New("leader: no leader known")

// Sign sets the signature of an internal call whose body is body on req.
func Sign(req *http.Request, body, secret []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set(HeaderSignature, ts+":"+mac(secret, req, ts, body))
}

// Verify reports whether req carries a valid signature made with secret. It reads
// the body (at most 1 MiB) to check it, and puts it back for the handler.
func Verify(req *http.Request, secret []byte, now time.Time) bool {
	ts, sig, ok := strings.Cut(req.Header.Get(HeaderSignature), ":")
	if !ok {
		return false
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > SignatureWindow || d < -SignatureWindow {
		return false
	}
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(io.LimitReader(req.Body, maxSignedBody+1))
		req.Body.Close()
		if err != nil || len(body) > maxSignedBody {
			return false
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	return hmac.Equal([]byte(sig), []byte(mac(secret, req, ts, body)))
}

func mac(secret []byte, req *http.Request, ts string, body []byte) string {
	sum := sha256.Sum256(body)
	h := hmac.New(sha256.New, secret)
	io.WriteString(h, "reaper-internal\n"+req.Method+"\n"+req.URL.Path+"\n"+req.URL.RawQuery+"\n"+ts+"\n")
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
	_, addr, ok := n.Leader()
	if !ok || addr == "" {
		return 0, nil, ErrNoLeader
	}
	return n.Call(ctx, addr, method, path, body)
}

// Call sends a signed internal call to the node at apiAddr (host:port), over
// HTTPS when the cluster has TLS, and returns its answer's status and body
// (bounded to 1 MiB). It blocks for 5 s at most.
func (n *Node) Call(ctx context.Context, apiAddr, method, path string, body []byte) (int, []byte, error) {
	return n.caller.call(ctx, apiAddr, method, path, body)
}

func (c *caller) call(ctx context.Context, apiAddr, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+apiAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	Sign(req, body, c.secret, time.Now())
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

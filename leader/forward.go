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
	"time"
)

// Internal calls between nodes (a wake ask forwarded to the leader, a membership
// change) go to a peer's API address, its admin listener, under /internal/. They
// are signed with the cluster secret, which never travels itself: the header
// carries the time and an HMAC-SHA256 of the method, the path, the query, the time
// and the body's SHA-256. A signature is valid for SignatureWindow around the
// receiver's clock; within it, a replay can only repeat the very same call, which
// every internal call tolerates (asks and membership changes are idempotent).

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

// forwardClient bounds internal calls: they are small and a peer that does not
// answer quickly is treated as unreachable.
var forwardClient = &http.Client{Timeout: 5 * time.Second}

// Forward sends a signed internal call to the current leader's API address and
// returns its answer's status and body (bounded to 1 MiB). It returns ErrNoLeader
// when no leader is known, and an error when the call fails; the caller decides
// whether that matters (a stored wake ask is handled by the next pass anyway).
func (n *Node) Forward(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	_, addr, ok := n.Leader()
	if !ok || addr == "" {
		return 0, nil, ErrNoLeader
	}
	return Call(ctx, addr, n.cfg.Secret, method, path, body)
}

// Call sends a signed internal call to the node at apiAddr (host:port).
func Call(ctx context.Context, apiAddr string, secret []byte, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+apiAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	Sign(req, body, secret, time.Now())
	resp, err := forwardClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("leader: internal call to %s: %w", apiAddr, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("leader: internal call to %s: %w", apiAddr, err)
	}
	return resp.StatusCode, out, nil
}

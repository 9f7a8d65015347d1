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
// carries the time and an HMAC-SHA256 of the method, the path and the time. A
// signature is valid for SignatureWindow around the receiver's clock; replaying one
// within it repeats an idempotent call, no more.

// HeaderSignature is the header that carries an internal call's signature.
const HeaderSignature = "X-Reaper-Cluster-Signature"

// SignatureWindow is how far from the receiver's clock a signed time may be.
const SignatureWindow = 60 * time.Second

// ErrNoLeader is returned by Forward when no leader is known (an election is under
// way, or this node is cut off).
var ErrNoLeader = errors.New("leader: no leader known")

// Sign sets the signature of an internal call on req.
func Sign(req *http.Request, secret []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set(HeaderSignature, ts+":"+mac(secret, req.Method, req.URL.Path, ts))
}

// Verify reports whether req carries a valid signature made with secret.
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
	want := mac(secret, req.Method, req.URL.Path, ts)
	return hmac.Equal([]byte(sig), []byte(want))
}

func mac(secret []byte, method, path, ts string) string {
	h := hmac.New(sha256.New, secret)
	io.WriteString(h, "reaper-internal\n"+method+"\n"+path+"\n"+ts)
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
	Sign(req, secret, time.Now())
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

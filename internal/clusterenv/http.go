package clusterenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// NewClient returns an HTTP client for single requests (warm-ups, status polls,
// wakes): keep-alive, no proxy from the environment.
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}, Timeout: timeout}
}

// Answer is one HTTP answer read whole.
type Answer struct {
	Status     int
	Header     http.Header
	Body       []byte
	ReceivedAt time.Time // when the last byte of the body was read
}

// Get sends GET / to addr with the Host header host and extra headers, and reads
// the answer whole (up to 1 MiB).
func Get(ctx context.Context, c *http.Client, addr, host string, header map[string]string) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return Answer{}, err
	}
	req.Host = host
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "reaper-clusterenv")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Body: body, ReceivedAt: time.Now()}
	return a, err
}

// AppStatus asks reaper at gateway for the status of the app behind host (the
// CleverCloud-Reaper: status header: never traffic, never a wake).
func AppStatus(ctx context.Context, c *http.Client, gateway, host string) (string, error) {
	a, err := Get(ctx, c, gateway, host, map[string]string{"CleverCloud-Reaper": "status"})
	if err != nil {
		return "", err
	}
	var st struct {
		Status string `json:"status"`
	}
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &st) != nil || st.Status == "" {
		return "", fmt.Errorf("clusterenv: status request answered %d: %.200s", a.Status, a.Body)
	}
	return st.Status, nil
}

// WaitStatus polls the app's status until it is want.
func WaitStatus(ctx context.Context, c *http.Client, gateway, host, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		st, err := AppStatus(ctx, c, gateway, host)
		if err != nil {
			return err
		}
		if st == want {
			return nil
		}
		last = st
		if time.Now().After(deadline) {
			return fmt.Errorf("clusterenv: app behind %s still %s after %s, want %s", host, last, timeout, want)
		}
		if !SleepCtx(ctx, 20*time.Millisecond) { // poll interval
			return ctx.Err()
		}
	}
}

// SleepCtx waits for d and reports whether it did (false: ctx ended first).
func SleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// SecretToken returns prefix and 24 random hex digits: admin tokens, cluster
// secrets and API tokens that no run shares with another.
func SecretToken(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// DistinctAddrs returns n free loopback addresses, all different.
func DistinctAddrs(n int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		a, err := freeport.Pick()
		if err != nil {
			return nil, err
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}

package fakeclever

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a manual clock for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func startFake(t *testing.T, opts Options) *Fake {
	t.Helper()
	f := New(opts)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("body %q: %v", a.body, err)
	}
}

func call(t *testing.T, method, url, auth string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// bearer is the Authorization header of the fake's token.
func bearer(f *Fake) string { return "Bearer " + f.Token() }

// oauthHeader signs with PLAINTEXT as the reference says.
func oauthHeader(c OAuthCreds) string {
	sig := percentEncode(percentEncode(c.ConsumerSecret) + "&" + percentEncode(c.Secret))
	return `OAuth oauth_consumer_key="` + percentEncode(c.ConsumerKey) + `", oauth_token="` + percentEncode(c.Token) +
		`", oauth_signature_method="PLAINTEXT", oauth_signature="` + sig + `", oauth_timestamp="1", oauth_nonce="n", oauth_version="1.0"`
}

package leader

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSignature(t *testing.T) {
	secret := []byte("0123456789abcdef-secret")
	now := time.Unix(1_800_000_000, 0)
	req := httptest.NewRequest("POST", "/internal/asks/app", nil)
	Sign(req, nil, secret, now)
	if strings.Contains(req.Header.Get(HeaderSignature), string(secret)) {
		t.Fatal("the secret travels in the header")
	}
	cases := []struct {
		name string
		mut  func(r *http.Request) (*http.Request, time.Time)
		ok   bool
	}{
		{"valid", func(r *http.Request) (*http.Request, time.Time) { return r, now }, true},
		{"clock a little ahead", func(r *http.Request) (*http.Request, time.Time) { return r, now.Add(59 * time.Second) }, true},
		{"too old", func(r *http.Request) (*http.Request, time.Time) { return r, now.Add(61 * time.Second) }, false},
		{"from the future", func(r *http.Request) (*http.Request, time.Time) { return r, now.Add(-61 * time.Second) }, false},
		{"other path", func(r *http.Request) (*http.Request, time.Time) {
			o := httptest.NewRequest("POST", "/internal/asks/other", nil)
			o.Header = r.Header
			return o, now
		}, false},
		{"other method", func(r *http.Request) (*http.Request, time.Time) {
			o := httptest.NewRequest("DELETE", "/internal/asks/app", nil)
			o.Header = r.Header
			return o, now
		}, false},
		{"missing", func(r *http.Request) (*http.Request, time.Time) {
			return httptest.NewRequest("POST", "/internal/asks/app", nil), now
		}, false},
		{"garbage", func(r *http.Request) (*http.Request, time.Time) {
			o := httptest.NewRequest("POST", "/internal/asks/app", nil)
			o.Header.Set(HeaderSignature, "x:y")
			return o, now
		}, false},
	}
	for _, c := range cases {
		r, at := c.mut(req)
		if got := Verify(r, secret, at); got != c.ok {
			t.Errorf("%s: Verify = %v, want %v", c.name, got, c.ok)
		}
	}
	if Verify(req, []byte("another secret, same length!!"), now) {
		t.Error("a signature made with another secret is accepted")
	}

	// The body and the query are signed: a signature cannot carry another member.
	body := []byte(`{"id":"n4","raft_addr":"10.0.0.4:7000","api_addr":"10.0.0.4:9090"}`)
	signed := httptest.NewRequest("POST", "/internal/members?x=1", bytes.NewReader(body))
	Sign(signed, body, secret, now)
	forged := httptest.NewRequest("POST", "/internal/members?x=1", strings.NewReader(`{"id":"evil","raft_addr":"6.6.6.6:7000","api_addr":"6.6.6.6:9090"}`))
	forged.Header = signed.Header
	if Verify(forged, secret, now) {
		t.Error("a signature was accepted for another body")
	}
	requery := httptest.NewRequest("POST", "/internal/members?x=2", bytes.NewReader(body))
	requery.Header = signed.Header
	if Verify(requery, secret, now) {
		t.Error("a signature was accepted for another query")
	}
	if !Verify(signed, secret, now) {
		t.Fatal("the signed call is refused")
	}
	if got, _ := io.ReadAll(signed.Body); !bytes.Equal(got, body) {
		t.Errorf("the body read back after Verify = %q", got)
	}
}

func TestCall_SignsTheRequest(t *testing.T) {
	secret := []byte("0123456789abcdef-secret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Verify(r, secret, time.Now()) {
			w.WriteHeader(401)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	code, body, err := newCaller(secret, nil).call(context.Background(), addr, "POST", "/internal/x", nil)
	if err != nil || code != 200 || string(body) != "ok" {
		t.Errorf("signed: %d %q %v", code, body, err)
	}
	code, _, _ = newCaller([]byte("wrong secret wrong secret"), nil).call(context.Background(), addr, "POST", "/internal/x", nil)
	if code != 401 {
		t.Errorf("wrong secret: %d, want 401", code)
	}
}

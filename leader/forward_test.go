package leader

import (
	"context"
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
	Sign(req, secret, now)
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
	code, body, err := Call(context.Background(), addr, secret, "POST", "/internal/x", nil)
	if err != nil || code != 200 || string(body) != "ok" {
		t.Errorf("signed: %d %q %v", code, body, err)
	}
	code, _, _ = Call(context.Background(), addr, []byte("wrong secret wrong secret"), "POST", "/internal/x", nil)
	if code != 401 {
		t.Errorf("wrong secret: %d, want 401", code)
	}
}

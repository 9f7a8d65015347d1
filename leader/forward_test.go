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
	Sign(req, nil, secret, "n2", now)
	if strings.Contains(req.Header.Get(HeaderSignature), string(secret)) {
		t.Fatal("the secret travels in the header")
	}
	again := httptest.NewRequest("POST", "/internal/asks/app", nil)
	Sign(again, nil, secret, "n2", now)
	if again.Header.Get(HeaderSignature) == req.Header.Get(HeaderSignature) {
		t.Fatal("two calls signed alike: the nonce does not change")
	}
	with := func(method, target string, h http.Header) *http.Request {
		o := httptest.NewRequest(method, target, nil)
		o.Header = h.Clone()
		return o
	}
	header := func(k, v string) http.Header {
		h := req.Header.Clone()
		h.Set(k, v)
		return h
	}
	parts := strings.Split(req.Header.Get(HeaderSignature), ":")
	otherNonce := strings.Repeat("0", 32)
	if parts[1] == otherNonce {
		otherNonce = strings.Repeat("1", 32)
	}
	cases := []struct {
		name string
		r    *http.Request
		self string
		at   time.Time
		ok   bool
	}{
		{"valid", req, "n2", now, true},
		{"clock a little ahead", req, "n2", now.Add(59 * time.Second), true},
		{"too old", req, "n2", now.Add(61 * time.Second), false},
		{"from the future", req, "n2", now.Add(-61 * time.Second), false},
		{"taken by another node", req, "n3", now, false},
		{"target changed", with("POST", "/internal/asks/app", header(HeaderTarget, "n3")), "n3", now, false},
		{"other nonce", with("POST", "/internal/asks/app", header(HeaderSignature, parts[0]+":"+otherNonce+":"+parts[2])), "n2", now, false},
		{"no nonce (the old format)", with("POST", "/internal/asks/app", header(HeaderSignature, parts[0]+":"+parts[2])), "n2", now, false},
		{"other path", with("POST", "/internal/asks/other", req.Header), "n2", now, false},
		{"other method", with("DELETE", "/internal/asks/app", req.Header), "n2", now, false},
		{"missing", httptest.NewRequest("POST", "/internal/asks/app", nil), "n2", now, false},
		{"garbage", with("POST", "/internal/asks/app", header(HeaderSignature, "x:y:z")), "n2", now, false},
	}
	for _, c := range cases {
		if got := Verify(c.r, secret, c.self, c.at); got != c.ok {
			t.Errorf("%s: Verify = %v, want %v", c.name, got, c.ok)
		}
	}
	if Verify(req, []byte("another secret, same length!!"), "n2", now) {
		t.Error("a signature made with another secret is accepted")
	}

	// The body and the query are signed: a signature cannot carry another member.
	body := []byte(`{"id":"n4","raft_addr":"10.0.0.4:7000","api_addr":"10.0.0.4:9090"}`)
	signed := httptest.NewRequest("POST", "/internal/members?x=1", bytes.NewReader(body))
	Sign(signed, body, secret, "n1", now)
	forged := httptest.NewRequest("POST", "/internal/members?x=1", strings.NewReader(`{"id":"evil","raft_addr":"6.6.6.6:7000","api_addr":"6.6.6.6:9090"}`))
	forged.Header = signed.Header
	if Verify(forged, secret, "n1", now) {
		t.Error("a signature was accepted for another body")
	}
	requery := httptest.NewRequest("POST", "/internal/members?x=2", bytes.NewReader(body))
	requery.Header = signed.Header
	if Verify(requery, secret, "n1", now) {
		t.Error("a signature was accepted for another query")
	}
	if !Verify(signed, secret, "n1", now) {
		t.Fatal("the signed call is refused")
	}
	if got, _ := io.ReadAll(signed.Body); !bytes.Equal(got, body) {
		t.Errorf("the body read back after Verify = %q", got)
	}
}

func TestCall_SignsTheRequest(t *testing.T) {
	secret := []byte("0123456789abcdef-secret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Verify(r, secret, "n9", time.Now()) {
			w.WriteHeader(401)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	code, body, err := newCaller(secret, nil).call(context.Background(), "n9", addr, "POST", "/internal/x", nil)
	if err != nil || code != 200 || string(body) != "ok" {
		t.Errorf("signed: %d %q %v", code, body, err)
	}
	code, _, _ = newCaller([]byte("wrong secret wrong secret"), nil).call(context.Background(), "n9", addr, "POST", "/internal/x", nil)
	if code != 401 {
		t.Errorf("wrong secret: %d, want 401", code)
	}
	code, _, _ = newCaller(secret, nil).call(context.Background(), "n8", addr, "POST", "/internal/x", nil)
	if code != 401 {
		t.Errorf("signed for another node: %d, want 401", code)
	}
}

package forwardauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Envoy asks with the original request line under its path_prefix, and the
// original host as the Host: that is the original request, whatever
// X-Forwarded-* headers say.
func TestOriginal_FromEnvoysRequestLine(t *testing.T) {
	for _, c := range []struct{ target, uri, path string }{
		{"/auth/envoy/orders/7?x=1&y=%2F", "/orders/7?x=1&y=%2F", "/orders/7"},
		{"/auth/envoy/", "/", "/"},
		{"/auth/envoy", "/", "/"},
		{"/auth/envoy?x=1", "/?x=1", "/"},
	} {
		r := httptest.NewRequest("POST", "http://app.test"+c.target, nil)
		r.Header.Set("Content-Length", "0")
		r.Header.Set("X-Forwarded-Uri", "/not-this")
		r.Header.Set("Accept", "application/json")
		o, err := original(context.Background(), r, true)
		if err != nil {
			t.Fatalf("%s: %v", c.target, err)
		}
		if o.Method != "POST" || o.Host != "app.test" || o.RequestURI != c.uri || o.URL.Path != c.path || o.Body != http.NoBody {
			t.Errorf("%s: got %s %s %s (%s)", c.target, o.Method, o.Host, o.RequestURI, o.URL.Path)
		}
		if o.Header.Get("Accept") != "application/json" || o.Header.Get("Content-Length") != "" {
			t.Errorf("%s: headers %v", c.target, o.Header)
		}
	}
}

// Envoy relays any status but 200 and the 5xx: a 5xx is given as a 429, a
// 200 that is not the go-ahead as a 203, each with its body and headers and
// the real status beside; a 4xx is given as it is.
func TestAnswerEnvoy_StatusesEnvoyRelays(t *testing.T) {
	for _, c := range []struct{ status, want int }{
		{503, 429}, {504, 429}, {502, 429}, {200, 203}, {404, 404}, {403, 403},
	} {
		w := httptest.NewRecorder()
		answerEnvoy(w, answer{status: c.status, header: http.Header{"Retry-After": {"30"}, "Content-Type": {"text/html"}}, body: []byte("<html>page")})
		if w.Code != c.want || w.Header().Get("Retry-After") != "30" || !strings.HasPrefix(w.Body.String(), "<html>") {
			t.Errorf("%d: %d %v %q, want %d with the headers and body", c.status, w.Code, w.Header(), w.Body, c.want)
		}
		real := w.Header().Get(HeaderAnswerStatus)
		if (c.want != c.status) != (real == itoa(c.status)) {
			t.Errorf("%d: %s %q", c.status, HeaderAnswerStatus, real)
		}
	}
}

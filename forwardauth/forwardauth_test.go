package forwardauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

func TestOriginal_FromTheForwardedHeaders(t *testing.T) {
	cases := []struct {
		name                    string
		header                  map[string]string
		method, host, uri, path string
	}{
		{"all given", map[string]string{"X-Forwarded-Method": "post", "X-Forwarded-Host": "app.test", "X-Forwarded-Uri": "/a/b?x=1"}, "POST", "app.test", "/a/b?x=1", "/a/b"},
		{"none: a GET of / on the auth call's host", nil, "GET", "auth.local", "/", "/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://auth.local/auth", nil)
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			r.Header.Set("Accept", "text/html")
			o, err := original(context.Background(), r, false)
			if err != nil {
				t.Fatal(err)
			}
			if o.Method != c.method || o.Host != c.host || o.RequestURI != c.uri || o.URL.Path != c.path {
				t.Errorf("got %s %s %s (%s)", o.Method, o.Host, o.RequestURI, o.URL.Path)
			}
			if o.Header.Get("Accept") != "text/html" || o.Header.Get("X-Forwarded-Uri") != "" || o.Body != http.NoBody {
				t.Errorf("headers %v", o.Header)
			}
		})
	}
	r := httptest.NewRequest("GET", "http://auth.local/auth", nil)
	r.Header.Set("X-Forwarded-Uri", "no-slash")
	if _, err := original(context.Background(), r, false); err == nil {
		t.Error("a URI that is not a request URI was taken")
	}
}

func TestServer_OnlyTrustedPeersMayAsk(t *testing.T) {
	s := New(http.NotFoundHandler(), Options{})
	for addr, want := range map[string]bool{"127.0.0.1:5": true, "[::1]:5": true, "[::ffff:127.0.0.1]:5": true, "10.1.2.3:5": false, "garbage": false} {
		if got := s.isTrusted(addr); got != want {
			t.Errorf("default, %s: %v", addr, got)
		}
	}
	s = New(http.NotFoundHandler(), Options{Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if s.isTrusted("127.0.0.1:5") || !s.isTrusted("10.1.2.3:5") {
		t.Error("auth_trusted_proxies replaces the loopback default")
	}
}

func TestAnswerStore_EachAnswerOnceWithinTheTTL(t *testing.T) {
	s := newAnswerStore()
	id := s.put(answer{status: 503, body: []byte("page"), at: time.Now()})
	if a, ok := s.take(id); !ok || a.status != 503 || string(a.body) != "page" {
		t.Fatalf("take: %v %v", a, ok)
	}
	if _, ok := s.take(id); ok {
		t.Error("an answer was given twice")
	}
	old := s.put(answer{status: 503, at: time.Now().Add(-answerTTL)})
	if _, ok := s.take(old); ok {
		t.Error("an answer past its TTL was given")
	}
	for range answersMax + 10 {
		s.put(answer{status: 200, body: []byte("x"), at: time.Now()})
	}
	if len(s.m) > answersMax || len(s.order) > 2*answersMax || s.size > answersMaxSize {
		t.Errorf("past the bounds: %d answers, %d ids, %d bytes", len(s.m), len(s.order), s.size)
	}
}

// nginx cannot relay a stream: a streamed answer (the page's live progress)
// becomes a 404 the page takes as "poll instead", and the stream never starts.
func TestRecorder_NoStreamForNginx(t *testing.T) {
	r := newRecorder(httptest.NewRecorder(), false)
	r.Header().Set("Content-Type", "text/event-stream")
	r.WriteHeader(200)
	if err := http.NewResponseController(r).Flush(); err == nil {
		t.Error("the stream was allowed to start")
	}
	if _, err := r.Write([]byte("data: x\n\n")); err == nil {
		t.Error("stream data was kept")
	}
	if a := r.answer(); a.status != 404 || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("answer %d %v", a.status, a.header)
	}
}

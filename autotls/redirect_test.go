package autotls

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHTTPHandler_RedirectsToHTTPSKeepingHostPathAndQuery(t *testing.T) {
	var solved []string
	h := httpHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == ChallengePath+"known-token" {
			solved = append(solved, r.Host)
			io.WriteString(w, "key-authorization")
			return true
		}
		return false
	})
	cases := []struct {
		method, target, host string
		code                 int
		location, body       string
	}{
		{"GET", "/x?y", "a.test", 308, "https://a.test/x?y", ""},
		{"GET", "/x?y=1&z=%2F", "a.test:80", 308, "https://a.test/x?y=1&z=%2F", ""},
		{"POST", "/form", "a.test:8081", 308, "https://a.test/form", ""},
		{"GET", "/a%20b/", "[2001:db8::1]:80", 308, "https://[2001:db8::1]/a%20b/", ""},
		{"GET", "/", "", 400, "", ""},
		{"GET", ChallengePath + "known-token", "a.test", 200, "", "key-authorization"},
		{"GET", ChallengePath + "unknown", "a.test", 404, "", ""},
		{"HEAD", ChallengePath + "x", "a.test", 404, "", ""},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, "http://placeholder"+c.target, nil)
		req.Host = c.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code || rec.Header().Get("Location") != c.location {
			t.Errorf("%s %s (Host %q): %d Location %q, want %d %q", c.method, c.target, c.host,
				rec.Code, rec.Header().Get("Location"), c.code, c.location)
		}
		if c.body != "" && rec.Body.String() != c.body {
			t.Errorf("%s %s: body %q, want %q", c.method, c.target, rec.Body.String(), c.body)
		}
	}
	if len(solved) != 1 {
		t.Errorf("the solver answered %d requests, want the one with a known token", len(solved))
	}
}

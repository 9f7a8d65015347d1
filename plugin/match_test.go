package plugin

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var urlRoot = url.URL{Path: "/"}

// asciiUpper upper-cases ASCII letters only, as hosts are compared.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

const matchRoutes = `
routes:
  - {id: exact, frontend: {domains: [app.example.com]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: exact-api, frontend: {domains: [app.example.com/api]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: exact-api-v1, frontend: {domains: [app.example.com/api/v1/]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: wild, frontend: {domains: ["*.example.com"]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: wild-deep, frontend: {domains: ["*.b.example.com"]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: wild-path, frontend: {domains: ["*.example.com/static"]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: m-post, frontend: {domains: [m.example.com], methods: [post]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: disabled, enabled: false, frontend: {domains: [off.test]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: post-only, frontend: {domains: [methods.test], methods: [POST, PUT]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: any-method, frontend: {domains: [methods.test]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - id: hdr
    frontend:
      domains: [hdr.test]
      headers: {X-Env: prod, X-Token: "Regex(ab.*)", X-Any: "Wildcard(a*z)"}
    backend: {targets: ["http://127.0.0.1:1"]}
  - {id: tie-first, frontend: {domains: [tie.test/x]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: tie-second, frontend: {domains: [tie.test/x], methods: [GET]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: multi, frontend: {domains: [one.test, "two.test/x"]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: ipv6, frontend: {domains: ["[::1]"]}, backend: {targets: ["http://127.0.0.1:1"]}}
`

func TestRouter_Match(t *testing.T) {
	r := mustRouter(t, matchRoutes, nil, nil)
	okHeaders := http.Header{"X-Env": {"prod"}, "X-Token": {"abc"}, "X-Any": {"a-to-z"}}
	with := func(k, v string) http.Header {
		h := okHeaders.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	cases := []struct {
		name, method, host, path string
		header                   http.Header
		want                     string // route id, "" for no match
	}{
		{"exact host", "GET", "app.example.com", "/", nil, "exact"},
		{"case and port ignored", "GET", "APP.Example.COM:8080", "/api", nil, "exact-api"},
		{"trailing dot", "GET", "app.example.com.", "/", nil, "exact"},
		{"longest prefix", "GET", "app.example.com", "/api/v1/users", nil, "exact-api-v1"},
		{"prefix with trailing slash configured", "GET", "app.example.com", "/api/v1", nil, "exact-api-v1"},
		{"segment boundary", "GET", "app.example.com", "/api/v10", nil, "exact-api"},
		{"segment boundary at root", "GET", "app.example.com", "/apix", nil, "exact"},
		{"paths are case-sensitive", "GET", "app.example.com", "/API", nil, "exact"},
		{"dot segments resolved", "GET", "app.example.com", "/api/../x", nil, "exact"},
		{"exact host wins over a longer wildcard path", "GET", "app.example.com", "/static/x", nil, "exact"},
		{"wildcard one label", "GET", "a.example.com", "/", nil, "wild"},
		{"wildcard path", "GET", "a.example.com", "/static/app.js", nil, "wild-path"},
		{"wildcard path boundary", "GET", "a.example.com", "/staticx", nil, "wild"},
		{"more specific wildcard", "GET", "a.b.example.com", "/", nil, "wild-deep"},
		{"wildcard several labels", "GET", "x.y.b.example.com:443", "/static", nil, "wild-deep"},
		{"wildcard several labels, generic", "GET", "x.y.example.com", "/", nil, "wild"},
		{"wildcard not the bare domain", "GET", "example.com", "/", nil, ""},
		{"wildcard not a lookalike", "GET", "badexample.com", "/", nil, ""},
		{"exact route skipped on method, wildcard takes it", "GET", "m.example.com", "/", nil, "wild"},
		{"exact route with method", "POST", "m.example.com", "/", nil, "m-post"},
		{"disabled route never matches", "GET", "off.test", "/", nil, ""},
		{"method filter", "PUT", "methods.test", "/", nil, "post-only"},
		{"method filter skips to the next route", "GET", "methods.test", "/", nil, "any-method"},
		{"headers all match", "GET", "hdr.test", "/", okHeaders, "hdr"},
		{"header missing", "GET", "hdr.test", "/", with("X-Env", ""), ""},
		{"exact header value differs", "GET", "hdr.test", "/", with("X-Env", "Prod"), ""},
		{"regex must match the whole value", "GET", "hdr.test", "/", with("X-Token", "xabc"), ""},
		{"wildcard value fails", "GET", "hdr.test", "/", with("X-Any", "a-to-y"), ""},
		{"one of several values matches", "GET", "hdr.test", "/", func() http.Header {
			h := okHeaders.Clone()
			h["X-Env"] = []string{"dev", "prod"}
			return h
		}(), "hdr"},
		{"ties broken by order", "GET", "tie.test", "/x/y", nil, "tie-first"},
		{"no path match", "GET", "tie.test", "/y", nil, ""},
		{"several domains 1", "GET", "one.test", "/", nil, "multi"},
		{"several domains 2", "GET", "two.test", "/x", nil, "multi"},
		{"several domains, path", "GET", "two.test", "/", nil, ""},
		{"ipv6 literal", "GET", "[0::1]:8080", "/", nil, "ipv6"},
		{"unknown host", "GET", "nope.test", "/", nil, ""},
		{"empty host", "GET", "", "/", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://placeholder"+tc.path, nil)
			req.Host = tc.host
			if tc.header != nil {
				req.Header = tc.header
			}
			route, ok := r.Match(req)
			got := ""
			if ok {
				got = route.ID
			}
			if got != tc.want {
				t.Errorf("Match(%s %s%s) = %q, want %q", tc.method, tc.host, tc.path, got, tc.want)
			}
		})
	}
}

func TestRouter_MatchCatchAll(t *testing.T) {
	r := mustRouter(t, `
routes:
  - {id: any, frontend: {domains: ["*"]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: any-admin, frontend: {domains: ["*/admin"]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: wild, frontend: {domains: ["*.test"]}, backend: {targets: ["http://127.0.0.1:1"]}}
`, nil, nil)
	for _, tc := range []struct{ host, path, want string }{
		{"whatever.example", "/", "any"},
		{"", "/", "any"},
		{"x.example", "/admin/users", "any-admin"},
		{"a.test", "/admin", "wild"}, // a wildcard host wins over the catch-all, whatever the path
	} {
		req := httptest.NewRequest("GET", "http://placeholder"+tc.path, nil)
		req.Host = tc.host
		route, ok := r.Match(req)
		if !ok || route.ID != tc.want {
			t.Errorf("Match(%s%s) = %v, want %s", tc.host, tc.path, route, tc.want)
		}
	}
}

func TestRouter_MatchDoesNotAllocate(t *testing.T) {
	r := mustRouter(t, matchRoutes, nil, nil)
	req := httptest.NewRequest("GET", "http://app.example.com:8080/api/v1/users", nil)
	wreq := httptest.NewRequest("GET", "http://x.y.b.example.com/static", nil)
	if n := testing.AllocsPerRun(100, func() { r.Match(req); r.Match(wreq) }); n != 0 {
		t.Errorf("Match allocates %v times per call", n)
	}
}

// refMatch is a slow reference for host matching, written independently of the
// table: a regular expression per pattern, on the normalized host.
func refMatch(pattern, host string) bool {
	switch {
	case pattern == "*":
		return true
	case strings.HasPrefix(pattern, "*."):
		return regexp.MustCompile(`(?s)^.+` + regexp.QuoteMeta(asciiLower(pattern[1:])) + `$`).MatchString(host)
	}
	return host == asciiLower(pattern)
}

// FuzzMatchDomain checks the domain matcher against refMatch, and that case and a
// port never change the result, and that "*.x" never matches "x".
func FuzzMatchDomain(f *testing.F) {
	for _, s := range [][2]string{
		{"hello.localhost", "hello.localhost"},
		{"hello.localhost", "HELLO.localhost:8080"},
		{"*.example.com", "a.example.com"},
		{"*.example.com", "a.b.example.com"},
		{"*.example.com", "example.com"},
		{"*.example.com", ".example.com"},
		{"*.example.com", "..example.com"},
		{"*", "anything"},
		{"a_b.test", "A_B.test."},
		{"127.0.0.1", "127.0.0.1:80"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, host string) {
		d, ok := parseDomain(pattern)
		if !ok || d.prefix != "" || strings.Contains(pattern, "[") || strings.ContainsAny(host, "[]") {
			return // hosts only; IPv6 literals are covered by TestRouter_Match
		}
		route := &Route{ID: "r", Enabled: true, domains: []domain{d}}
		rt := &Router{table: newTable([]*Route{route})}
		match := func(h string) bool {
			req := &http.Request{Method: "GET", Host: h, URL: &urlRoot, Header: http.Header{}}
			_, ok := rt.Match(req)
			return ok
		}
		got := match(host)
		hostPattern, _, _ := strings.Cut(pattern, "/")
		if want := refMatch(hostPattern, requestHost(host)); got != want {
			t.Fatalf("pattern %q host %q: matched %v, reference says %v", pattern, host, got, want)
		}
		if up := asciiUpper(host); match(up) != got {
			t.Fatalf("pattern %q: %q and %q differ", pattern, host, up)
		}
		if !strings.Contains(host, ":") {
			if withPort := host + ":8080"; match(withPort) != got {
				t.Fatalf("pattern %q: %q and %q differ", pattern, host, withPort)
			}
		}
		if d.wildcard && d.host != "" && match(d.host[1:]) {
			t.Fatalf("pattern %q matches its bare domain", pattern)
		}
	})
}

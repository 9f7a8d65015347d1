package plugin

import "testing"

func TestParseDomain(t *testing.T) {
	cases := []struct {
		in   string
		want domain
		ok   bool
	}{
		{"hello.localhost", domain{host: "hello.localhost"}, true},
		{"Hello.LocalHost", domain{host: "hello.localhost"}, true},
		{"api.example.com/v1", domain{host: "api.example.com", prefix: "/v1"}, true},
		{"api.example.com/V1/", domain{host: "api.example.com", prefix: "/V1"}, true}, // paths keep case
		{"api.example.com/", domain{host: "api.example.com"}, true},
		{"*.example.com", domain{host: ".example.com", wildcard: true}, true},
		{"*.Example.com/x", domain{host: ".example.com", wildcard: true, prefix: "/x"}, true},
		{"*", domain{wildcard: true}, true},
		{"*/admin", domain{wildcard: true, prefix: "/admin"}, true},
		{"127.0.0.1", domain{host: "127.0.0.1"}, true},
		{"[::1]", domain{host: "[::1]"}, true},
		{"[0:0::1]/a", domain{host: "[::1]", prefix: "/a"}, true},
		{"under_score.test", domain{host: "under_score.test"}, true},
		{"a.test/x:y@z;a=b", domain{host: "a.test", prefix: "/x:y@z;a=b"}, true},
		{"", domain{}, false},
		{"a b", domain{}, false},
		{"a..b", domain{}, false},
		{".a", domain{}, false},
		{"a.", domain{}, false},
		{"a.*.com", domain{}, false},
		{"*a.com", domain{}, false},
		{"**.a.com", domain{}, false},
		{"a.test:8080", domain{}, false},
		{"a.test/x?y", domain{}, false},
		{"a.test/x#y", domain{}, false},
		{"a.test/x y", domain{}, false},
		{"a.test/%41", domain{}, false},
		{"a.test/a//b", domain{}, false},
		{"a.test/./b", domain{}, false},
		{"a.test/..", domain{}, false},
		{"[::1", domain{}, false},
		{"[1.2.3.4]", domain{}, false},
		{"[fe80::1%eth0]", domain{}, false},
		{"/path", domain{}, false},
	}
	for _, tc := range cases {
		got, ok := parseDomain(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseDomain(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRequestHost(t *testing.T) {
	cases := map[string]string{
		"hello.localhost":       "hello.localhost",
		"Hello.LOCALHOST:8080":  "hello.localhost",
		"hello.localhost.":      "hello.localhost",
		"hello.localhost.:80":   "hello.localhost",
		"127.0.0.1:80":          "127.0.0.1",
		"[::1]:8080":            "[::1]",
		"[0:0:0:0:0:0:0:1]":     "[::1]",
		"[::1":                  "",
		"[zz]:1":                "",
		"":                      "",
		"already.lower.example": "already.lower.example",
	}
	for in, want := range cases {
		if got := requestHost(in); got != want {
			t.Errorf("requestHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRequestHost_NoAllocationForPlainHosts(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = requestHost("hello.localhost:8080") }); n != 0 {
		t.Errorf("requestHost allocates %v times for a plain host", n)
	}
}

func TestHasPathPrefix(t *testing.T) {
	cases := []struct {
		path, prefix string
		want         bool
	}{
		{"/v1", "/v1", true},
		{"/v1/", "/v1", true},
		{"/v1/x", "/v1", true},
		{"/v10", "/v1", false},
		{"/v", "/v1", false},
		{"/", "", true},
		{"/anything", "", true},
		{"*", "", true},
		{"/V1", "/v1", false}, // paths are case-sensitive
	}
	for _, tc := range cases {
		if got := hasPathPrefix(tc.path, tc.prefix); got != tc.want {
			t.Errorf("hasPathPrefix(%q, %q) = %v", tc.path, tc.prefix, got)
		}
	}
}

func TestRequestPath(t *testing.T) {
	cases := []struct {
		in, want string
		changed  bool
	}{
		{"/a/b", "/a/b", false},
		{"/a/b/", "/a/b/", false},
		{"/.well-known/x", "/.well-known/x", false},
		{"", "/", true},
		{"*", "*", false},
		{"/public/../admin", "/admin", true},
		{"/public/./x/", "/public/x/", true},
		{"//admin", "/admin", true},
		{"/a//b/", "/a/b/", true},
		{"/..", "/", true},
		{"/a/..", "/", true},
	}
	for _, tc := range cases {
		got, changed := requestPath(tc.in)
		if got != tc.want || changed != tc.changed {
			t.Errorf("requestPath(%q) = %q, %v; want %q, %v", tc.in, got, changed, tc.want, tc.changed)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"a*", "a", true},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*", "", true},
		{"", "", true},
		{"", "a", false},
		{"a*c", "abbbc", true},
		{"a*c", "abbbd", false},
		{"*b*", "abc", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXcYb", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"**a", "xxa", true},
	}
	for _, tc := range cases {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
}

package plugin

import (
	"net/netip"
	"path"
	"strings"
)

// domain is a parsed frontend domain: a host (exact, wildcard or any) and a path
// prefix.
type domain struct {
	// host is the lower-case host for an exact domain; for a wildcard it is the
	// suffix with its leading dot (".example.com"); empty for "*".
	host     string
	wildcard bool
	// prefix is the path prefix without a trailing slash; empty for the root.
	prefix string
}

// parseDomain parses "host" or "host/path". The host is a DNS name (letters,
// digits, '-', '_'), an IPv4 address, a bracketed IPv6 address, "*.name" or "*".
// The path uses only characters that need no escaping in a URL path, and has no
// empty, "." or ".." segment, so that it reads the same decoded and escaped.
func parseDomain(s string) (domain, bool) {
	host, p, hasPath := strings.Cut(s, "/")
	var d domain
	switch {
	case host == "*":
		d.wildcard = true
	case strings.HasPrefix(host, "*."):
		if !validHostname(host[2:]) {
			return domain{}, false
		}
		d.wildcard, d.host = true, asciiLower(host[1:])
	case strings.HasPrefix(host, "["):
		if !strings.HasSuffix(host, "]") {
			return domain{}, false
		}
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return domain{}, false
		}
		d.host = "[" + a.String() + "]"
	default:
		if !validHostname(host) {
			return domain{}, false
		}
		d.host = asciiLower(host)
	}
	if hasPath {
		prefix, ok := cleanPrefix("/" + p)
		if !ok {
			return domain{}, false
		}
		d.prefix = prefix
	}
	return d, true
}

// validHostname reports whether s is a dot-separated list of labels of 1 to 63
// letters, digits, '-' or '_', at most 253 characters in all.
func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// cleanPrefix checks a configured path prefix (domain path or backend root) and
// returns it without its trailing slashes ("/" gives "").
func cleanPrefix(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "", true
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", false
		}
		for i := 0; i < len(seg); i++ {
			if !pathChar(seg[i]) {
				return "", false
			}
		}
	}
	return p, true
}

// pathChar reports whether c may appear unescaped in a URL path segment
// (RFC 3986 pchar without pct-encoded).
func pathChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

// requestHost returns the request's host without its port, lower-cased, without a
// trailing dot; IPv6 literals keep their brackets in canonical form. It allocates
// only when the host needs changing (upper case, IPv6).
func requestHost(h string) string {
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return ""
		}
		a, err := netip.ParseAddr(h[1:end])
		if err != nil {
			return ""
		}
		return "[" + a.WithZone("").String() + "]"
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= 'A' && c <= 'Z' {
			return asciiLower(h)
		}
	}
	return h
}

// asciiLower lower-cases ASCII letters only: host names are ASCII, and Unicode
// case folding would let "\u212a.test" (Kelvin sign) reach "k.test".
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// hasPathPrefix reports whether p is prefix or starts with prefix followed by a
// slash. The empty prefix (the root) takes every path.
func hasPathPrefix(p, prefix string) bool {
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	return len(p) == len(prefix) || p[len(prefix)] == '/' || prefix == ""
}

// requestPath returns the path used for matching and forwarding: the request's
// path with dot segments and doubled slashes resolved (a trailing slash kept), so
// that "/public/../admin" can neither escape a path prefix nor slip past an exclude
// pattern. changed reports whether it differs from p. Clean paths cost nothing.
func requestPath(p string) (clean string, changed bool) {
	if p == "" {
		return "/", true
	}
	if p[0] != '/' || !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return p, false // "*" (OPTIONS *) and clean paths stay as they are
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c, c != p
}

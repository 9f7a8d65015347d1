package plugin

import (
	"cmp"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// headerMatcher is one compiled frontend.headers entry.
type headerMatcher struct {
	name  string // canonical header name
	exact string
	glob  string // Wildcard(...) pattern, when isGlob
	re    *regexp.Regexp
	// isGlob distinguishes Wildcard() from an exact value
	isGlob bool
}

func (m *headerMatcher) match(h http.Header) bool {
	for _, v := range h[m.name] {
		switch {
		case m.re != nil:
			if m.re.MatchString(v) {
				return true
			}
		case m.isGlob:
			if globMatch(m.glob, v) {
				return true
			}
		case v == m.exact:
			return true
		}
	}
	return false
}

// globMatch reports whether s matches pattern, where '*' stands for any run of
// characters (possibly empty) and every other byte stands for itself.
func globMatch(pattern, s string) bool {
	// Greedy matching with backtracking to the last star: linear in practice and
	// never exponential.
	star, match := -1, 0
	p, i := 0, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, match = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			match++
			i = match
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// candidate is one (route, path prefix) pair found under a host.
type candidate struct {
	route  *Route
	prefix string
	order  int // index of the route in the configuration, for ties
}

// table finds the route for a request: exact hosts by map lookup, wildcard
// suffixes by one map lookup per label of the request's host (longest suffix
// first), then the catch-all "*". Under each host, candidates are sorted by
// longest path prefix, then configuration order.
type table struct {
	exact    map[string][]candidate
	wildcard map[string][]candidate // key: ".example.com"
	any      []candidate
}

func newTable(routes []*Route) *table {
	t := &table{exact: map[string][]candidate{}, wildcard: map[string][]candidate{}}
	for i, r := range routes {
		if !r.Enabled {
			continue
		}
		for _, d := range r.domains {
			c := candidate{route: r, prefix: d.prefix, order: i}
			switch {
			case !d.wildcard:
				t.exact[d.host] = append(t.exact[d.host], c)
			case d.host == "":
				t.any = append(t.any, c)
			default:
				t.wildcard[d.host] = append(t.wildcard[d.host], c)
			}
		}
	}
	sortCandidates := func(cs []candidate) {
		slices.SortStableFunc(cs, func(a, b candidate) int {
			if c := cmp.Compare(len(b.prefix), len(a.prefix)); c != 0 {
				return c
			}
			return cmp.Compare(a.order, b.order)
		})
	}
	for _, cs := range t.exact {
		sortCandidates(cs)
	}
	for _, cs := range t.wildcard {
		sortCandidates(cs)
	}
	sortCandidates(t.any)
	return t
}

// match returns the first candidate for host (as requestHost returns it) and path
// whose route also accepts the request's method and headers.
func (t *table) match(host, path string, req *http.Request) (candidate, bool) {
	if cs, ok := t.exact[host]; ok {
		if c, ok := pick(cs, path, req); ok {
			return c, true
		}
	}
	if len(t.wildcard) > 0 {
		// Suffixes from the longest (most specific) to the shortest; i > 0 so
		// that "*.example.com" never takes "example.com" nor ".example.com".
		for i := 1; i < len(host); i++ {
			if host[i] != '.' {
				continue
			}
			if cs, ok := t.wildcard[host[i:]]; ok {
				if c, ok := pick(cs, path, req); ok {
					return c, true
				}
			}
		}
	}
	return pick(t.any, path, req)
}

func pick(cs []candidate, path string, req *http.Request) (candidate, bool) {
	for _, c := range cs {
		if hasPathPrefix(path, c.prefix) && c.route.accepts(req) {
			return c, true
		}
	}
	return candidate{}, false
}

// accepts reports whether the route's method and header constraints hold.
func (r *Route) accepts(req *http.Request) bool {
	if len(r.methods) > 0 && !slices.Contains(r.methods, req.Method) {
		return false
	}
	for i := range r.headers {
		if !r.headers[i].match(req.Header) {
			return false
		}
	}
	return true
}

// Match returns the route that takes req: the request's host (port ignored, case
// ignored) matched exactly before wildcards, the longest path prefix first, ties
// broken by configuration order; routes whose methods or headers do not accept the
// request are skipped. It does not block and is safe for concurrent use.
func (r *Router) Match(req *http.Request) (*Route, bool) {
	p, _ := requestPath(req.URL.Path)
	c, ok := r.table.match(requestHost(req.Host), p, req)
	return c.route, ok
}

// compileHeaderMatcher parses a frontend.headers value.
func compileHeaderMatcher(name, value string) (headerMatcher, error) {
	m := headerMatcher{name: http.CanonicalHeaderKey(name)}
	switch {
	case strings.HasPrefix(value, "Regex(") && strings.HasSuffix(value, ")"):
		re, err := compileFull(value[len("Regex(") : len(value)-1])
		if err != nil {
			return m, err
		}
		m.re = re
	case strings.HasPrefix(value, "Wildcard(") && strings.HasSuffix(value, ")"):
		m.glob, m.isGlob = value[len("Wildcard("):len(value)-1], true
	default:
		m.exact = value
	}
	return m, nil
}

// compileFull compiles re so that it must match a whole string.
func compileFull(re string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(re); err != nil {
		return nil, err // the error of the expression as written
	}
	return regexp.Compile(`^(?:` + re + `)$`)
}

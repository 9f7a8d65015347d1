package reaper

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/reapergw/reaper/internal/conf"
)

// The files crawlers fetch on their own schedule (robots.txt, a sitemap, the
// favicon) are not a visit: a route's not_activity paths are served (a sleeping
// app is woken to answer them), but never move the app's idle clock, so a crawler
// that comes back every few minutes does not keep the app awake for ever.

// DefaultNotActivity are the not_activity paths of a route that does not set
// them.
var DefaultNotActivity = []string{"/robots.txt", "/sitemap.xml", "/favicon.ico"}

// Bounds of the not_activity list.
const (
	maxNotActivity     = 64
	maxNotActivityPath = 256
)

// pathMatcher is one not_activity entry: an exact path, or, written with a
// final "*", every path that begins with what comes before it.
type pathMatcher struct {
	path   string
	prefix bool
}

func (m pathMatcher) matches(p string) bool {
	if m.prefix {
		return strings.HasPrefix(p, m.path)
	}
	return p == m.path
}

// checkNotActivity checks the route's not_activity list and keeps it parsed:
// each entry a path that begins with "/", with at most one "*", at its end.
func (c *Config) checkNotActivity(path string, errs *conf.Errors) {
	c.notActivity = c.notActivity[:0]
	at := conf.Key(path, "not_activity")
	if len(c.NotActivity) > maxNotActivity {
		errs.Add(at, "lists %d paths; at most %d", len(c.NotActivity), maxNotActivity)
		return
	}
	for i, p := range c.NotActivity {
		m, msg := parseNotActivity(p)
		if msg != "" {
			errs.Add(conf.Index(at, i), "%s %s", strconv.Quote(p), msg)
			continue
		}
		c.notActivity = append(c.notActivity, m)
	}
}

// parseNotActivity reads one entry; msg says what is wrong with it.
func parseNotActivity(p string) (m pathMatcher, msg string) {
	switch {
	case !strings.HasPrefix(p, "/"):
		return m, "must begin with / (a path, such as /robots.txt, or a prefix, such as /.well-known/*)"
	case len(p) > maxNotActivityPath:
		return m, "is longer than " + strconv.Itoa(maxNotActivityPath) + " bytes"
	case strings.ContainsAny(p, "?#"):
		return m, "must be a path only: the query is not matched"
	case strings.Count(p, "*") > 1 || (strings.Contains(p, "*") && !strings.HasSuffix(p, "*")):
		return m, "may hold one *, at its end only (a prefix: /static/*)"
	}
	if strings.HasSuffix(p, "*") {
		return pathMatcher{path: strings.TrimSuffix(p, "*"), prefix: true}, ""
	}
	return pathMatcher{path: p}, ""
}

// isNotActivity reports whether r asks for one of the route's not_activity
// paths. A list that did not validate matches nothing.
func (c *Config) isNotActivity(r *http.Request) bool {
	for _, m := range c.notActivity {
		if m.matches(r.URL.Path) {
			return true
		}
	}
	return false
}

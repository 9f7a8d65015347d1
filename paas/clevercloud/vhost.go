package clevercloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas"
)

// ErrAmbiguousHost: a host is a vhost of more than one app, or a route's hosts
// lead to more than one app. The error names them; the route must say app_id.
var ErrAmbiguousHost = errors.New("clevercloud: the host leads to more than one app")

// Defaults of the vhost index's refresh bounds (Options.VHostMaxAge,
// Options.VHostRefresh).
const (
	DefaultVHostMaxAge  = 5 * time.Minute
	DefaultVHostRefresh = 30 * time.Second
)

// NormalizeHost returns the host a request's Host or an app's vhost names, in
// the form they are compared in: lower case, without port, trailing dot, path
// (a vhost example.com/api is the host example.com) or scheme; an IPv6 literal
// in brackets, in its canonical form. Blank gives "".
func NormalizeHost(s string) string {
	s = strings.TrimSpace(s)
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	s = strings.Trim(s, "[]")
	if a, err := netip.ParseAddr(s); err == nil && a.Is6() && !a.Is4In6() {
		return "[" + a.WithZone("").String() + "]"
	}
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

// vhostApp is an app that has a vhost.
type vhostApp struct{ id, name string }

// vhostIndex maps each normalised vhost to the apps that have it, as the API
// last listed them. It is read again when older than maxAge, or when a host is
// missing from it and the last read is at least refresh old; concurrent callers
// share one read.
type vhostIndex struct {
	maxAge, refresh time.Duration

	mu      sync.Mutex
	byHost  map[string][]vhostApp
	readAt  time.Time
	reading chan struct{} // closed when the read in flight ends; nil when none
}

// FindApp returns the app whose vhosts include the hosts of a route's domains
// (see NormalizeHost; wildcard domains are passed over), for a route that does
// not name its app. The domains that are no app's vhost are passed over; those
// that are must all lead to one app. It reads the apps' vhosts through the API
// (GET /v2/summary for the owners, then GET {owner}/applications), cached: the
// list is read again when older than Options.VHostMaxAge, or when a host is
// missing from it and the last read is at least Options.VHostRefresh old. It
// blocks for at most those reads, bounded by ctx. Errors wrap paas.ErrNotFound
// (no domain is a vhost of an app the credential sees), ErrAmbiguousHost (the
// error names both apps), or those of ObserveAll.
func (c *Client) FindApp(ctx context.Context, domains []string) (string, error) {
	var hosts []string
	for _, d := range domains {
		if h := NormalizeHost(d); h != "" && !strings.HasPrefix(h, "*") && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return "", lookupError{"clevercloud: find the app by host: no exact domain to look up among the apps' vhosts", paas.ErrNotFound}
	}
	byHost, err := c.vhosts.lookup(ctx, hosts, c.listVHosts)
	if err != nil {
		return "", err
	}
	return pickApp(hosts, byHost)
}

// pickApp decides which app the hosts lead to, given the apps of each host.
func pickApp(hosts []string, byHost map[string][]vhostApp) (string, error) {
	var found []vhostApp
	var foundBy []string
	for _, h := range hosts {
		apps := byHost[h]
		if len(apps) > 1 {
			return "", lookupError{fmt.Sprintf("clevercloud: %s is a vhost of %s and %s: set app_id", h, apps[0], apps[1]), ErrAmbiguousHost}
		}
		if len(apps) == 1 && !slices.Contains(found, apps[0]) {
			found, foundBy = append(found, apps[0]), append(foundBy, h)
		}
	}
	switch len(found) {
	case 0:
		return "", lookupError{fmt.Sprintf("clevercloud: %s: not a vhost of any app the credential sees", strings.Join(hosts, ", ")), paas.ErrNotFound}
	case 1:
		return found[0].id, nil
	}
	return "", lookupError{fmt.Sprintf("clevercloud: %s is a vhost of %s, %s of %s: a route serves one app: split it, or set app_id",
		foundBy[0], found[0], foundBy[1], found[1]), ErrAmbiguousHost}
}

// lookupError is an answer of FindApp: its message says it all, and it wraps
// the sentinel that classifies it (without repeating its words).
type lookupError struct {
	msg  string
	kind error
}

func (e lookupError) Error() string { return e.msg }
func (e lookupError) Unwrap() error { return e.kind }

func (a vhostApp) String() string {
	if a.name == "" || a.name == a.id {
		return a.id
	}
	return a.id + " (" + a.name + ")"
}

// lookup returns the apps of each host, reading the index again through read
// when it is too old, or when a host is missing and refresh allows.
func (x *vhostIndex) lookup(ctx context.Context, hosts []string, read func(context.Context) (map[string][]vhostApp, error)) (map[string][]vhostApp, error) {
	for {
		x.mu.Lock()
		if wait := x.reading; wait != nil {
			x.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("clevercloud: read the apps' vhosts: %w", ctx.Err())
			}
		}
		if !x.needRead(hosts, time.Now()) {
			out := make(map[string][]vhostApp, len(hosts))
			for _, h := range hosts {
				out[h] = x.byHost[h]
			}
			x.mu.Unlock()
			return out, nil
		}
		done := make(chan struct{})
		x.reading = done
		x.mu.Unlock()
		byHost, err := read(ctx)
		x.mu.Lock()
		if err == nil {
			x.byHost, x.readAt = byHost, time.Now()
		}
		x.reading = nil
		close(done)
		x.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// needRead reports whether the index must be read again before answering for
// hosts (x.mu held).
func (x *vhostIndex) needRead(hosts []string, now time.Time) bool {
	age := now.Sub(x.readAt)
	if x.byHost == nil || age >= x.maxAge {
		return true
	}
	if age < x.refresh {
		return false
	}
	for _, h := range hosts {
		if _, ok := x.byHost[h]; !ok {
			return true
		}
	}
	return false
}

// listVHosts reads every app the credential sees with its vhosts: the owners
// from /v2/summary, then GET {owner}/applications for each.
func (c *Client) listVHosts(ctx context.Context) (map[string][]vhostApp, error) {
	seen, err := c.summary(ctx)
	if err != nil {
		return nil, err
	}
	var owners []string
	for _, a := range seen {
		if !slices.Contains(owners, a.owner) {
			owners = append(owners, a.owner)
		}
	}
	slices.Sort(owners)
	byHost := map[string][]vhostApp{}
	for _, owner := range owners {
		req := request{op: "list the applications of " + owner, method: http.MethodGet,
			path: ownerPath(owner) + "/applications", safe: true}
		body, err := c.do(ctx, req)
		if err != nil {
			return nil, err
		}
		var apps []jsonApp
		if err := json.Unmarshal(body, &apps); err != nil {
			return nil, c.fail(req, "the answer is not a list of applications", paas.ErrUnavailable)
		}
		for _, a := range apps {
			c.owners.learn(a.ID, owner)
			for _, v := range a.VHosts {
				h := NormalizeHost(v.FQDN)
				if h == "" || slices.ContainsFunc(byHost[h], func(o vhostApp) bool { return o.id == a.ID }) {
					continue
				}
				byHost[h] = append(byHost[h], vhostApp{id: a.ID, name: a.Name})
			}
		}
	}
	return byHost, nil
}
